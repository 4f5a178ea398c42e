package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testEnv(out, errOut *syncbuf.Buffer) *environment {
	return &environment{stdin: strings.NewReader(""), stdout: out, stderr: errOut, getenv: func(string) string { return "" }}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func startDevVault(t *testing.T, args ...string) (*syncbuf.Buffer, func() int) {
	t.Helper()
	out, errOut := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, testEnv(out, errOut), append([]string{"dev-vault"}, args...)) }()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Admin endpoints: ") }, 5*time.Second, 10*time.Millisecond, errOut.String())
	return out, func() int { cancel(); return <-done }
}

func TestDevVaultServesAndApproves(t *testing.T) {
	addr := freeAddr(t)
	out, stop := startDevVault(t, "--addr", addr, "--token", "vc_tok_cli_test")
	assert.Contains(t, out.String(), "listening on http://"+addr)
	assert.Contains(t, out.String(), "agent token: vc_tok_cli_test")
	assert.Contains(t, out.String(), "export VC_BASE_URL=http://"+addr+" VC_AGENT_TOKEN=vc_tok_cli_test")

	c := vault.New(vault.Options{})
	s := session.Session{BaseURL: "http://" + addr, Token: "vc_tok_cli_test", TimeoutMS: 5000}
	ctx := context.Background()
	conn, err := c.GetConnector(ctx, s.Endpoint(), "google")
	require.NoError(t, err)
	req := map[string]any{"connector_id": "google", "verb": "google.gmail.send.v1", "module_hash": conn.Object()["policy_hash"],
		"request": map[string]any{"to": []any{"a@example.com"}, "text_plain": "hi"}}
	resp, err := c.ExecuteJob(ctx, s.Endpoint(), req, "")
	require.NoError(t, err)
	jobID := resp.Object()["job"].(map[string]any)["job_id"].(string)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "approval needed: apj_") }, 2*time.Second, 10*time.Millisecond)
	pid := regexp.MustCompile(`approval needed: (apj_\S+)`).FindStringSubmatch(out.String())[1]
	assert.Contains(t, out.String(), "POST /v0/connectors/execute-job -> 202")

	aout, aerr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	require.Equal(t, 0, run(ctx, testEnv(aout, aerr), []string{"dev-vault", "pending", "--addr", addr}))
	assert.Contains(t, aout.String(), pid)
	// A header, and the expiry with its date and zone.
	lines := strings.Split(strings.TrimSpace(aout.String()), "\n")
	require.Len(t, lines, 2, aout.String())
	assert.Regexp(t, `^PENDING_ID\s+KIND\s+VERB\s+JOB\s+EXPIRES$`, lines[0])
	assert.Regexp(t, `\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(Z|[+-]\d{2}:\d{2})$`, lines[1])
	aout = &syncbuf.Buffer{}
	require.Equal(t, 0, run(ctx, testEnv(aout, aerr), []string{"dev-vault", "pending", "--addr", addr, "--json"}))
	var pend struct {
		Items []struct {
			PendingID string    `json:"pending_id"`
			JobID     string    `json:"job_id"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(aout.String()), &pend), aout.String())
	require.Len(t, pend.Items, 1)
	assert.Equal(t, pid, pend.Items[0].PendingID)
	assert.Equal(t, jobID, pend.Items[0].JobID)
	assert.WithinDuration(t, time.Now().Add(15*time.Minute), pend.Items[0].ExpiresAt, time.Minute)
	aout = &syncbuf.Buffer{}
	require.Equal(t, 0, run(ctx, testEnv(aout, aerr), []string{"dev-vault", "approve", pid, "--addr", addr}), aerr.String())
	assert.Equal(t, "approve: "+pid+" is now SUCCEEDED\n", aout.String())
	assert.Equal(t, 1, run(ctx, testEnv(aout, aerr), []string{"dev-vault", "deny", pid, "--addr", addr}))
	assert.Contains(t, aerr.String(), "not WAITING")
	assert.Equal(t, 2, run(ctx, testEnv(aout, aerr), []string{"dev-vault", "approve"}))

	resp, err = c.JobGet(ctx, s.Endpoint(), jobID)
	require.NoError(t, err)
	assert.Equal(t, "SUCCEEDED", resp.Object()["job"].(map[string]any)["status"])
	assert.NotContains(t, out.String(), "Bearer")
	assert.Equal(t, 0, stop())
	assert.Contains(t, out.String(), "dev-vault stopped")
}

func TestDevVaultUnixSocketAndDeny(t *testing.T) {
	dir, err := os.MkdirTemp("", "dv")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "vc.sock")
	out, stop := startDevVault(t, "--socket", sock, "--quiet")
	assert.Contains(t, out.String(), "listening on unix://"+sock)
	tok := regexp.MustCompile(`agent token: (\S+)`).FindStringSubmatch(out.String())[1]
	c := vault.New(vault.Options{})
	s := session.Session{BaseURL: "unix://" + sock, Token: tok, TimeoutMS: 5000}
	_, err = c.Execute(context.Background(), s.Endpoint(), map[string]any{"connector_id": "google", "verb": "google.gmail.drafts.send", "module_hash": "x"}, "")
	require.Error(t, err) // a validation failure, over the socket
	_, err = c.ListConnectors(context.Background(), s.Endpoint())
	require.NoError(t, err)

	aout, aerr := &syncbuf.Buffer{}, &syncbuf.Buffer{}
	assert.Equal(t, 0, run(context.Background(), testEnv(aout, aerr), []string{"dev-vault", "pending", "--socket", sock}))
	assert.Equal(t, "no approvals waiting\n", aout.String())
	assert.Equal(t, 1, run(context.Background(), testEnv(aout, aerr), []string{"dev-vault", "deny", "apj_missing", "--socket", sock}))
	assert.Contains(t, aerr.String(), "not found")
	assert.Equal(t, 0, stop())
	_, statErr := os.Stat(sock)
	assert.True(t, os.IsNotExist(statErr))
}
