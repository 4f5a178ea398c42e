package gateway

import (
	"log/slog"
	"sync"

	"github.com/accordsai/accords-mcp/platform/caller"
)

// DefaultMaxAnonymousTenants is how many tenants anonymous HTTP callers
// may use (ACCORDS_MCP_HTTP_MAX_ANON_TENANTS).
const DefaultMaxAnonymousTenants = 64

// tenantGate bounds the tenants anonymous callers can bring into use.
// Without a policy file anyone on the loopback interface is anonymous, and
// every new tenant header would otherwise create a scope (sessions,
// handles, rate-limit buckets) at will. Tenants already holding data count
// towards the bound and always stay usable.
type tenantGate struct {
	max    int
	load   func() ([]string, error)
	logger *slog.Logger

	once  sync.Once
	mu    sync.Mutex
	known map[string]bool
}

func newTenantGate(max int, load func() ([]string, error), logger *slog.Logger) *tenantGate {
	if max <= 0 {
		max = DefaultMaxAnonymousTenants
	}
	return &tenantGate{max: max, load: load, logger: logger, known: map[string]bool{}}
}

// admit reports whether tenant may be used, admitting a new one while
// there is room.
func (g *tenantGate) admit(tenant string) bool {
	if tenant == "" || tenant == caller.DefaultScope {
		return true
	}
	g.once.Do(func() {
		if g.load == nil {
			return
		}
		stored, err := g.load()
		if err != nil {
			g.logger.Warn("listing stored tenants failed; the anonymous tenant bound counts only tenants seen since start", "error", err.Error())
		}
		g.mu.Lock()
		for _, t := range stored {
			if t != caller.DefaultScope {
				g.known[t] = true
			}
		}
		g.mu.Unlock()
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known[tenant] {
		return true
	}
	if len(g.known) >= g.max {
		return false
	}
	g.known[tenant] = true
	return true
}
