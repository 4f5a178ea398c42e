package app_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// TestReceiptProveVerifiesOffTheShelf: vaultclaw_receipt_prove answers a
// receipt, its RFC 6962 inclusion proof and its signed checkpoint that
// golang.org/x/mod's sumdb/note and sumdb/tlog accept under the published
// key, by seq and by call id alike, in both the JSON fields and the C2SP
// tlog-proof text; another scope's receipt is not found.
func TestReceiptProveVerifiesOffTheShelf(t *testing.T) {
	t.Parallel()
	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_AUDIT_CHECKPOINT=1"))
	cs := mcptest.Connect(t, a.MCPServer(), nil)
	var callIDs []string
	for range 5 {
		env := mcptest.Call(t, cs.ClientSession, "vaultclaw_session_status", nil)
		require.True(t, env.OK)
		id, _ := env.Result.Meta["accords/call_id"].(string)
		require.NotEmpty(t, id)
		callIDs = append(callIDs, id)
	}
	verifier, err := note.NewVerifier(a.AuditKey.VerifierKey)
	require.NoError(t, err)

	byCall := mcptest.Call(t, cs.ClientSession, "vaultclaw_receipt_prove", map[string]any{"call_id": callIDs[2]})
	require.True(t, byCall.OK, "%+v", byCall.Error)
	p := verifyProof(t, byCall.Object(), verifier)
	assert.Equal(t, callIDs[2], p.receipt["call_id"])

	bySeq := mcptest.Call(t, cs.ClientSession, "vaultclaw_receipt_prove", map[string]any{"seq": p.seq})
	require.True(t, bySeq.OK, "%+v", bySeq.Error)
	assert.Equal(t, byCall.Object()["receipt"], bySeq.Object()["receipt"], "the same receipt, byte for byte")
	verifyProof(t, bySeq.Object(), verifier)

	env := mcptest.Call(t, cs.ClientSession, "vaultclaw_receipt_prove", map[string]any{})
	assert.Equal(t, apperr.CodeValidation, env.Code(), "one of seq and call_id is required")
	env = mcptest.Call(t, cs.ClientSession, "vaultclaw_receipt_prove", map[string]any{"seq": 1, "call_id": callIDs[0]})
	assert.Equal(t, apperr.CodeValidation, env.Code(), "not both")
	env = mcptest.Call(t, cs.ClientSession, "vaultclaw_receipt_prove", map[string]any{"seq": 1 << 40})
	assert.Equal(t, apperr.CodeNotFound, env.Code(), "a receipt the log does not hold")

	// Another tenant's receipt, by seq and by call id, is not found.
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()
	other := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_session_status", map[string]any{}, map[string]string{"X-Accords-Tenant-Id": "other"})
	require.True(t, other.OK)
	otherID, _ := other.Result.Meta["accords/call_id"].(string)
	require.NotEmpty(t, otherID)
	env = mcptest.Call(t, cs.ClientSession, "vaultclaw_receipt_prove", map[string]any{"call_id": otherID})
	assert.Equal(t, apperr.CodeNotFound, env.Code(), "another tenant's call id")
	rep := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_receipt_prove", map[string]any{"call_id": callIDs[0]}, map[string]string{"X-Accords-Tenant-Id": "other"})
	assert.Equal(t, apperr.CodeNotFound, rep.Code(), "the default scope's call id, asked by another tenant")
	rep = mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_receipt_prove", map[string]any{"seq": p.seq}, map[string]string{"X-Accords-Tenant-Id": "other"})
	assert.Equal(t, apperr.CodeNotFound, rep.Code(), "the default scope's seq, asked by another tenant")
}

type provenReceipt struct {
	seq     int64
	receipt map[string]any
}

// verifyProof checks a vaultclaw_receipt_prove answer with sumdb/note and
// sumdb/tlog only: the checkpoint's signature, the leaf and the audit path
// to the signed root, then the same for the tlog-proof text.
func verifyProof(t *testing.T, data map[string]any, v note.Verifier) provenReceipt {
	t.Helper()
	raw, _ := data["receipt"].(string)
	require.NotEmpty(t, raw)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &rec))
	seq := int64(rec["seq"].(float64))

	cpText, _ := data["checkpoint"].(string)
	size, root := openCheckpoint(t, cpText, v)
	assert.EqualValues(t, size, data["tree_size"])
	var path tlog.RecordProof
	for _, h := range data["inclusion_proof"].([]any) {
		path = append(path, hash(t, h.(string)))
	}
	leaf := tlog.RecordHash([]byte(raw))
	require.NoError(t, tlog.CheckRecord(path, size, root, seq-1, leaf), "inclusion of receipt %d in tree %d", seq, size)
	if size > 1 {
		require.Error(t, tlog.CheckRecord(path, size, root, (seq)%size, leaf), "a shifted index is refused")
	}

	// The C2SP tlog-proof text: header, extra data (the receipt), index,
	// the path, a blank line, then the checkpoint.
	text, _ := data["tlog_proof"].(string)
	sc := bufio.NewScanner(strings.NewReader(text))
	next := func() string { require.True(t, sc.Scan(), "tlog-proof ends early: %q", text); return sc.Text() }
	require.Equal(t, "c2sp.org/tlog-proof@v1", next())
	line := next()
	require.True(t, strings.HasPrefix(line, "extra "), line)
	extra, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(line, "extra "))
	require.NoError(t, err)
	require.Equal(t, raw, string(extra))
	line = next()
	require.True(t, strings.HasPrefix(line, "index "), line)
	index, err := strconv.ParseInt(strings.TrimPrefix(line, "index "), 10, 64)
	require.NoError(t, err)
	require.Equal(t, seq-1, index)
	var tpath tlog.RecordProof
	for line = next(); line != ""; line = next() {
		tpath = append(tpath, hash(t, line))
	}
	rest := strings.SplitAfterN(text, "\n\n", 2)
	require.Len(t, rest, 2)
	tsize, troot := openCheckpoint(t, rest[1], v)
	require.NoError(t, tlog.CheckRecord(tpath, tsize, troot, index, tlog.RecordHash(extra)))
	return provenReceipt{seq: seq, receipt: rec}
}

// openCheckpoint verifies a C2SP checkpoint's signature with sumdb/note
// and returns its size and root.
func openCheckpoint(t *testing.T, text string, v note.Verifier) (int64, tlog.Hash) {
	t.Helper()
	n, err := note.Open([]byte(text), note.VerifierList(v))
	require.NoError(t, err, "checkpoint signature under the published key")
	lines := strings.Split(n.Text, "\n")
	require.GreaterOrEqual(t, len(lines), 3)
	size, err := strconv.ParseInt(lines[1], 10, 64)
	require.NoError(t, err)
	return size, hash(t, lines[2])
}

func hash(t *testing.T, b64 string) tlog.Hash {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(b64)
	require.NoError(t, err)
	require.Len(t, b, tlog.HashSize)
	return tlog.Hash(b)
}
