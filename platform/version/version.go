// Package version holds the build version (set with -ldflags -X).
package version

import (
	"runtime"
	"runtime/debug"
)

// Version is reported in serverInfo, /healthz and the Vault User-Agent.
var Version = "0.1.0"

// Commit and BuildDate are set with -ldflags -X; when empty, Build uses
// what the Go toolchain stamped into the binary.
var (
	Commit    = ""
	BuildDate = ""
)

// UserAgent is sent on every outgoing HTTP request.
func UserAgent() string { return "accords-mcp/" + Version }

// Info describes this binary.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"build_date"`
	GoVersion string `json:"go_version"`
	Modified  bool   `json:"modified,omitempty"`
}

// Build reports this binary's version, commit and build date; unknown parts
// are "unknown".
func Build() Info {
	in := Info{Version: Version, Commit: Commit, BuildDate: BuildDate, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if in.Commit == "" {
					in.Commit = s.Value
				}
			case "vcs.time":
				if in.BuildDate == "" {
					in.BuildDate = s.Value
				}
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	if in.BuildDate == "" {
		in.BuildDate = "unknown"
	}
	return in
}
