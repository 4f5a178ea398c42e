package doctor

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// bleve (through the catalog import) starts package-level analysis workers.
// The user config dir (the audit key's default folder) is a temporary one.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "doctor-config-")
	if err != nil {
		panic(err)
	}
	_ = os.Setenv("XDG_CONFIG_HOME", dir)
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
		goleak.Cleanup(func(int) { _ = os.RemoveAll(dir) }))
}
