package doctor

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHTTPProbeOverUnixSocketSendsTokenAndTimeout(t *testing.T) {
	dir, err := os.MkdirTemp("", "dr")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "v.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	var gotAuth, gotPath string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotPath = r.Header.Get("Authorization"), r.URL.Path
		_, _ = w.Write([]byte(`{"connectors":[]}`))
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	for _, s := range []session.Session{
		{BaseURL: "unix://" + sock, Token: "vc_tok_abc", TimeoutMS: 2000},
		{BaseURL: "http+unix://" + strings.ReplaceAll(sock, "/", "%2F"), Token: "vc_tok_abc", TimeoutMS: 2000},
		{BaseURL: "http://vault.invalid", UnixSocket: sock, Token: "vc_tok_abc", TimeoutMS: 2000},
	} {
		status, err := HTTPProbe(context.Background(), s)
		require.NoError(t, err, s.BaseURL)
		assert.Equal(t, 200, status)
		assert.Equal(t, "Bearer vc_tok_abc", gotAuth)
		assert.Equal(t, "/v0/connectors", gotPath)
	}
}

func TestFilesFlagsLoosePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	db := filepath.Join(dir, "accords.db")
	require.NoError(t, os.WriteFile(db, []byte("x"), 0o644))
	rs := Files(cfgAt(db), db+".sock")
	var b bytes.Buffer
	Write(&b, rs)
	out := b.String()
	assert.Contains(t, out, "FAIL  db folder")
	assert.Contains(t, out, "chmod 700 "+dir)
	assert.Contains(t, out, "FAIL  db file")
	assert.Contains(t, out, "chmod 600 "+db)
	assert.True(t, Failed(rs))
	assert.Equal(t, "vc_***xyz", redact("Get: token vc_tok_xyz", "vc_tok_xyz")[len("Get: token "):])
}

// TestIndexCheckRebuilding: an index the daemon is rebuilding in the
// background is reported as such, not as an index to repair by hand.
func TestIndexCheckRebuilding(t *testing.T) {
	r := indexCheck(t.Context(), Inputs{Index: func(context.Context) IndexState {
		return IndexState{StoreRev: 42, Rebuilding: true}
	}})
	assert.Equal(t, OK, r.Status, "%+v", r)
	assert.Contains(t, r.Detail, "being rebuilt in the background")
	assert.Contains(t, r.Detail, "revision 42")
	r = indexCheck(t.Context(), Inputs{Index: func(context.Context) IndexState {
		return IndexState{StoreRev: 42, IndexRev: 40}
	}})
	assert.NotEqual(t, OK, r.Status)
}

// TestFilesFlagsAnotherUsersFiles: a database folder or socket another
// user owns may hold what that user put there, whatever its mode.
func TestFilesFlagsAnotherUsersFiles(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to give files to another user (chown)")
	}
	dir := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	db := filepath.Join(dir, "accords.db")
	require.NoError(t, os.WriteFile(db, []byte("x"), 0o600))
	require.NoError(t, os.Chown(dir, 65534, 65534))
	require.NoError(t, os.Chown(db, 65534, 65534))
	var b bytes.Buffer
	Write(&b, Files(cfgAt(db), db+".sock"))
	out := b.String()
	assert.Contains(t, out, "FAIL  db folder")
	assert.Contains(t, out, dir+" belongs to uid 65534")
	assert.Contains(t, out, "FAIL  db file")
}
