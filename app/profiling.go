package app

import (
	"log/slog"

	"github.com/accordsai/accords-mcp/platform/profiling"
	"github.com/accordsai/accords-mcp/transport"
)

// StartProfiling starts the opt-in pprof listener (ACCORDS_MCP_PPROF) on
// the loopback address addr, behind the bridge's browser guard: profiles
// show memory contents, and a web page could otherwise read them through a
// DNS-rebound name.
func StartProfiling(addr string, logger *slog.Logger) (*profiling.Server, error) {
	return profiling.Start(addr, transport.GuardBrowsers, logger)
}
