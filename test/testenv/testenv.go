// Package testenv builds throwaway apps and finds shared test data. It is
// imported only by tests.
package testenv

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/stretchr/testify/require"
)

// Config returns a configuration on a fresh temporary database; env entries
// ("KEY=value") override the environment it is read from.
func Config(t testing.TB, env ...string) config.Config {
	t.Helper()
	dir := t.TempDir()
	vars := map[string]string{
		"ACCORDS_MCP_DB":         filepath.Join(dir, "accords.db"),
		"ACCORDS_MCP_SECRET_KEY": strings.Repeat("ab", 32),
		// The audit key lives outside the database folder, as in use.
		"ACCORDS_MCP_AUDIT_KEY_FILE": filepath.Join(t.TempDir(), "audit.key"),
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	return cfg
}

// IsolateConfigDir points the user config dir (XDG_CONFIG_HOME) at a fresh
// temporary folder for the whole test binary, so defaults derived from it
// (the audit key file) never touch the real one. Call it from TestMain;
// run the returned cleanup after m.Run.
func IsolateConfigDir() func() {
	dir, err := os.MkdirTemp("", "accords-test-config-")
	if err != nil {
		panic(err)
	}
	_ = os.Setenv("XDG_CONFIG_HOME", dir)
	return func() { _ = os.RemoveAll(dir) }
}

// Open opens an app on cfg and closes it when the test ends.
func Open(t testing.TB, cfg config.Config, opts ...app.Option) *app.App {
	t.Helper()
	a, err := app.Open(cfg, Logger(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// Logger discards logs unless ACCORDS_TEST_LOGS is set.
func Logger() *slog.Logger {
	if os.Getenv("ACCORDS_TEST_LOGS") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// SharedDir finds ../shared/<sub> by walking up from the working directory;
// it skips the test when absent (CI lays shared/ beside the clone).
func SharedDir(t testing.TB, sub string) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		for _, cand := range []string{filepath.Join(dir, "shared", sub), filepath.Join(dir, "..", "shared", sub)} {
			if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
				return cand
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("shared/%s not found; skipping", sub)
		}
		dir = parent
	}
}
