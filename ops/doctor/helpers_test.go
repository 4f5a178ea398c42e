package doctor

import "github.com/accordsai/accords-mcp/platform/config"

func cfgAt(db string) config.Config {
	c, _ := config.FromEnv(func(k string) string {
		if k == "ACCORDS_MCP_DB" {
			return db
		}
		return ""
	})
	return c
}
