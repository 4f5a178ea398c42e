package control_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The control server must leave no goroutine behind once its context ends;
// bleve (through the operations API's catalog import) starts package-level
// analysis workers.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
