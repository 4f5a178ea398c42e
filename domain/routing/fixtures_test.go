package routing

import (
	"os"
	"path/filepath"
	"testing"
)

// readFixture reads shared/fixtures/<rel>, found by walking up from the
// package directory; the test is skipped when the fixtures are absent.
func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Skip("no working directory")
	}
	for {
		p := filepath.Join(dir, "shared", "fixtures", rel)
		if raw, err := os.ReadFile(p); err == nil {
			return raw
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("fixture %s not found", rel)
		}
		dir = parent
	}
}
