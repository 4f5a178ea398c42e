package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

// fixtureDir walks up from the package folder looking for the shared
// predecessor fixtures; tests skip when they are absent (CI layouts differ).
func fixtureDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "fixtures", "predecessor", "cookbooks", "google.workspace")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("predecessor fixtures not found (shared/fixtures)")
		}
		dir = parent
	}
}

func loadFixture(t testing.TB, version string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixtureDir(t), version+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
