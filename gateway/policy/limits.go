package policy

import (
	"maps"

	"github.com/accordsai/accords-mcp/gateway/ratelimit"
)

// DefaultLimit is the caller's limit of tools without an entry of their own.
func (c *Caller) DefaultLimit() ratelimit.Limit { return c.limit }

// ToolLimits are the caller's per-tool limits (a copy).
func (c *Caller) ToolLimits() map[string]ratelimit.Limit { return maps.Clone(c.tools) }
