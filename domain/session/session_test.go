package session_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

func newKeys(t *testing.T, c byte) *keyring.Keyring {
	k, err := keyring.New([]byte(strings.Repeat(string(c), 32)))
	require.NoError(t, err)
	return k
}

func openDB(t *testing.T, path string) *store.DB {
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	return db
}

func TestMask(t *testing.T) {
	require.Equal(t, "abc***xyz", session.Mask("abcdefxyz"))
	require.Equal(t, "abc***def", session.Mask("abcdef"))
	require.Equal(t, "***", session.Mask("abcde"))
	require.Equal(t, "***", session.Mask(""))
}

func TestConfigureValidation(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	svc := session.New(db, newKeys(t, 'k'), session.Defaults{})
	ctx := context.Background()
	cases := []struct {
		name, base, token string
		timeout           int
		field             string
	}{
		{"missing token", "", "  ", 0, "token"},
		{"ftp scheme", "ftp://x", "tok", 0, "base_url"},
		{"no host", "http://", "tok", 0, "base_url"},
		{"garbage url", "http://[::1", "tok", 0, "base_url"},
		{"empty socket path", "unix://", "tok", 0, "base_url"},
		{"negative timeout", "", "tok", -5, "timeout_ms"},
		{"huge timeout", "", "tok", session.MaxTimeoutMS + 1, "timeout_ms"},
		{"credentials in the URL", "http://agent:s3cret-pass@vault:8080", "tok", 0, "base_url"},
		{"user in the URL", "https://agent@vault", "tok", 0, "base_url"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.Configure(ctx, "default", c.base, c.token, c.timeout)
			require.True(t, apperr.Is(err, apperr.CodeValidation), "got %v", err)
			require.Equal(t, c.field, apperr.As(err).Details["field"])
			require.NotContains(t, err.Error(), "s3cret", "the credential is never echoed")
		})
	}
	st, err := svc.Status(ctx, "default")
	require.NoError(t, err)
	require.False(t, st.Configured, "a refused configure stores nothing")
	for _, ok := range []string{"https://vault.example", "unix:///run/vc.sock", "http+unix://%2Frun%2Fvc.sock"} {
		_, err := svc.Configure(ctx, "default", ok, "tok", 0)
		require.NoError(t, err, ok)
	}
}

func TestEnvDefaultAndStickyClear(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	svc := session.New(db, newKeys(t, 'k'), session.Defaults{Token: "env-token-123"})
	ctx := context.Background()

	st, err := svc.Status(ctx, "default")
	require.NoError(t, err)
	require.True(t, st.Configured)
	require.Equal(t, "env", st.Source)
	require.Equal(t, "env***123", st.Token)
	require.Equal(t, session.DefaultBaseURL, st.BaseURL)
	require.Equal(t, session.DefaultTimeoutMS, st.TimeoutMS)

	require.NoError(t, svc.Clear(ctx, "default"))
	st, err = svc.Status(ctx, "default")
	require.NoError(t, err)
	require.False(t, st.Configured, "clear must stick although VC_AGENT_TOKEN is set")
	_, err = svc.Resolve(ctx, "default")
	require.True(t, apperr.Is(err, apperr.CodeSessionNotConfigured))

	_, err = svc.Configure(ctx, "default", "http://127.0.0.1:9", "configured-token", 1500)
	require.NoError(t, err)
	s, err := svc.Resolve(ctx, "default")
	require.NoError(t, err)
	require.Equal(t, "configured-token", s.Token)
	require.Equal(t, 1500, s.TimeoutMS)
}

func TestScopesAreIsolated(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	svc := session.New(db, newKeys(t, 'k'), session.Defaults{})
	ctx := context.Background()
	_, err := svc.Configure(ctx, "tenant-a", "", "token-of-a", 0)
	require.NoError(t, err)

	st, err := svc.Status(ctx, "tenant-b")
	require.NoError(t, err)
	require.False(t, st.Configured)
	_, err = svc.Resolve(ctx, "tenant-b")
	require.True(t, apperr.Is(err, apperr.CodeSessionNotConfigured))
}

func TestRestartPersistenceAndWrongKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	ctx := context.Background()
	db := openDB(t, path)
	_, err := session.New(db, newKeys(t, 'k'), session.Defaults{}).Configure(ctx, "default", "http://127.0.0.1:8787", "super-secret-token", 3000)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "super-secret-token", "the token must be encrypted at rest")

	db = openDB(t, path)
	st, err := session.New(db, newKeys(t, 'k'), session.Defaults{}).Status(ctx, "default")
	require.NoError(t, err)
	require.Equal(t, session.Status{Configured: true, BaseURL: "http://127.0.0.1:8787", TimeoutMS: 3000, Token: "sup***ken", Source: "configured"}, st)
	s, err := session.New(db, newKeys(t, 'k'), session.Defaults{}).Resolve(ctx, "default")
	require.NoError(t, err)
	require.Equal(t, "super-secret-token", s.Token)

	_, err = session.New(db, newKeys(t, 'x'), session.Defaults{}).Resolve(ctx, "default")
	require.Error(t, err)
	ae := apperr.As(err)
	require.Equal(t, "secret_key_mismatch", ae.Details["reason"])
	require.Contains(t, ae.Message, "secret key")
	require.NotContains(t, ae.Message, "super-secret-token")
	require.NoError(t, db.Close())
}

func TestStatusSurfacesWrongKey(t *testing.T) {
	db := openDB(t, filepath.Join(t.TempDir(), "a.db"))
	defer db.Close()
	ctx := context.Background()
	_, err := session.New(db, newKeys(t, 'k'), session.Defaults{}).Configure(ctx, "default", "", "token-123456", 0)
	require.NoError(t, err)
	_, err = session.New(db, newKeys(t, 'z'), session.Defaults{}).Status(ctx, "default")
	require.Error(t, err, "a key mismatch must not look like an unconfigured session")
	require.Equal(t, "secret_key_mismatch", apperr.As(err).Details["reason"])
}
