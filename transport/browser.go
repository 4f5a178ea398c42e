package transport

import (
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
)

// AllowedOriginsVar names the variable listing extra browser origins; it
// appears in refusals so an operator knows what to set.
const AllowedOriginsVar = "ACCORDS_MCP_HTTP_ALLOWED_ORIGINS"

// browserGuard keeps web pages away from the bridge (decision D18). A page
// in any browser on the machine can POST to a loopback port without a
// preflight ("no-cors" with a Blob body), and a DNS-rebound name can make
// the page same-origin with the server. So:
//
//   - a request whose Host names something other than the loopback address
//     it arrived on is refused (DNS rebinding);
//   - a request from a browser context that is not same-origin (Origin not
//     the server's own and not on the allow-list, or Sec-Fetch-Site
//     cross-site / same-site) is refused, for every method: the MCP
//     endpoints act and /metrics reveals, so safe methods get no pass.
//
// Requests without browser headers (curl, SDK clients, bridges) are
// untouched. http.CrossOriginProtection decides the origin question; it
// exempts GET and HEAD, which is why check probes with the method set to
// POST.
type browserGuard struct {
	cop *http.CrossOriginProtection
}

func newBrowserGuard(allowed []string) (*browserGuard, error) {
	cop := http.NewCrossOriginProtection()
	for _, o := range allowed {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("%s: %w", AllowedOriginsVar, err)
		}
	}
	return &browserGuard{cop: cop}, nil
}

// refusal is why r must be refused, or nil. hostOnly skips the origin
// check (health endpoints stay open to pages but answer nothing secret).
func (g *browserGuard) refusal(r *http.Request, hostOnly bool) *apperr.Error {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && la != nil && isLoopbackHost(la.String()) && !isLoopbackHost(r.Host) {
		return apperr.New(apperr.CodePermissionDenied, "the Host header %q does not name this loopback server (DNS rebinding is refused)", clipHeader(r.Host)).
			With("reason", "host_not_allowed").With("host", clipHeader(r.Host))
	}
	if hostOnly {
		return nil
	}
	probe := r
	if r.Method != http.MethodPost {
		probe = r.WithContext(r.Context()) // shallow copy; the caller's request is not changed
		probe.Method = http.MethodPost
	}
	if err := g.cop.Check(probe); err != nil {
		e := apperr.New(apperr.CodePermissionDenied, "requests from a web page on another origin are refused; a browser-based client must be listed in %s", AllowedOriginsVar).
			With("reason", "cross_origin").With("allowed_origins_env", AllowedOriginsVar)
		if o := r.Header.Get("Origin"); o != "" {
			e.With("origin", clipHeader(o))
		}
		if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
			e.With("sec_fetch_site", clipHeader(s))
		}
		return e
	}
	return nil
}

// wrap refuses what refusal names with 403 and the envelope.
func (g *browserGuard) wrap(next http.Handler, hostOnly bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if e := g.refusal(r, hostOnly); e != nil {
			envelope.WriteHTTP(w, http.StatusForbidden, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// GuardBrowsers wraps h, the handler of a loopback listener beside the
// bridge (the profiling listener), in the bridge's browser guard: a
// DNS-rebound Host and a page on another origin get 403, with no origin
// allowed besides the listener's own.
func GuardBrowsers(h http.Handler) http.Handler {
	g, _ := newBrowserGuard(nil) // no origins to add: cannot fail
	return g.wrap(h, false)
}

// hasBrowserMarker reports whether a browser sent the request: browsers
// add Origin to cross-origin and POST requests and Sec-Fetch-* to all
// requests; other clients send neither.
func hasBrowserMarker(h http.Header) bool {
	if h.Get("Origin") != "" {
		return true
	}
	for name := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "Sec-Fetch-") {
			return true
		}
	}
	return false
}

// isLoopbackHost reports whether hostport (a Host header or an address)
// names the loopback interface.
func isLoopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// clipHeader bounds attacker-chosen header values echoed in refusals.
func clipHeader(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
