package config

import (
	"slices"
	"strings"
	"sync"
)

// runtimeVars are what the operating system, the Go runtime and the
// standard library read on the server's behalf: the search path and the
// user's folders (os.UserConfigDir, os.TempDir), locale and time zone,
// runtime tuning and coverage output, the system certificate roots, and
// the proxy settings remote catalog fetches honour.
var runtimeVars = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "TMPDIR": true, "TZ": true, "LANG": true, "LANGUAGE": true,
	"GOGC": true, "GODEBUG": true, "GOMAXPROCS": true, "GOTRACEBACK": true, "GORACE": true, "GOCOVERDIR": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "http_proxy": true, "https_proxy": true, "no_proxy": true,
}

// runtimePrefixes are families of runtimeVars (XDG base directories,
// locale categories).
var runtimePrefixes = []string{"XDG_", "LC_"}

// knownVars holds the names in Vars, built at first use: init functions
// (tracing.go) still append to Vars after package variables are set.
var knownVars = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, v := range Vars {
		m[v.Name] = true
	}
	return m
})

// DaemonInherits reports whether a daemon that a stdio launch starts keeps
// the launcher's variable name: the variables the server reads (Vars), the
// ones c lets catalog sources name as tokens (RemoteTokenEnvAllow), and
// what the operating system and Go runtime need. Everything else stays with
// the launcher: the daemon outlives it and serves every later client, so
// the launcher's other credentials (an OPENAI_API_KEY, a GITHUB_TOKEN) must
// not become reachable through it.
func (c Config) DaemonInherits(name string) bool {
	if runtimeVars[name] || knownVars()[name] || slices.Contains(c.RemoteTokenEnvAllow, name) {
		return true
	}
	for _, p := range runtimePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
