package metrics_test

import (
	"testing"

	"go.uber.org/goleak"
)

// bleve (through the catalog import) starts package-level analysis workers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
