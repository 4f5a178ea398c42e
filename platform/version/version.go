// Package version holds the build version (set with -ldflags -X).
package version

// Version is reported in serverInfo, /healthz and the Vault User-Agent.
var Version = "0.1.0"

// UserAgent is sent on every outgoing HTTP request.
func UserAgent() string { return "accords-mcp/" + Version }
