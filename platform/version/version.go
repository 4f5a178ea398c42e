// Package version holds the build version (set with -ldflags -X).
package version

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
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

// ID names this build, for telling two processes apart (a launch and the
// daemon it attaches to): the version, the commit and, when the commit does
// not tell builds apart (a modified tree, or none stamped, as with go run),
// a digest of the executable. Different IDs are different builds; equal IDs
// are the same build unless the executable could not be read.
func ID() string { return id() }

var id = sync.OnceValue(func() string { return Build().id(executableDigest) })

func (in Info) id(digest func() string) string {
	commit := in.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	s := in.Version + " (commit " + commit
	if in.Modified {
		s += ", modified"
	}
	if in.Modified || in.Commit == "unknown" {
		if d := digest(); d != "" {
			s += ", binary " + d
		}
	}
	return s + ")"
}

// executableDigest is the start of the SHA-256 of this process's
// executable, "" when it cannot be read.
func executableDigest() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	f, err := os.Open(exe)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}
