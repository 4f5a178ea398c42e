package remote

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes its servers, catalog and the service's idle
// connections; no fetch may leave a goroutine behind. bleve starts a fixed
// pool of analysis workers at package init, which is not a leak.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}
