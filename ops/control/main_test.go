package control_test

import (
	"testing"

	"github.com/accordsai/accords-mcp/test/otheruser"
	"go.uber.org/goleak"
)

// The control server must leave no goroutine behind once its context ends;
// bleve (through the operations API's catalog import) starts package-level
// analysis workers. The binary also serves as another user's listener
// (otheruser) in the tests of the client's checks.
func TestMain(m *testing.M) {
	otheruser.Main()
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"),
		goleak.Cleanup(func(int) { otheruser.Cleanup() }))
}
