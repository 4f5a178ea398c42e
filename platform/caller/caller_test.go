package caller

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestResolve(t *testing.T) {
	h := http.Header{}
	h.Set("X-Tenant-Id", "t-low")
	h.Set("X-OpenClaw-Tenant-Id", " t-mid ")
	assert.Equal(t, Local(), Resolve(Request{}, Fixed{}))
	assert.Equal(t, Principal{ID: LocalID, Scope: "ops", Transport: TransportStdio}, Resolve(Request{Header: h}, Fixed{Stdio: "ops"}))
	assert.Equal(t, Principal{ID: AnonymousID, Scope: "t-mid", Transport: TransportHTTP}, Resolve(Request{HTTP: true, Header: h}, Fixed{}),
		"the first tenant header in order wins, trimmed")
	assert.Equal(t, Principal{ID: AnonymousID, Scope: "pinned", Transport: TransportHTTP}, Resolve(Request{HTTP: true, Header: h}, Fixed{Anonymous: "pinned"}))
	assert.Equal(t, Principal{ID: AnonymousID, Scope: DefaultScope, Transport: TransportHTTP}, Resolve(Request{HTTP: true}, Fixed{}))
	assert.Equal(t, Principal{ID: "acme-bot", Scope: "acme", Transport: TransportHTTP, Authenticated: true},
		Resolve(Request{HTTP: true, Header: h, VerifiedID: "acme-bot", VerifiedTenant: "acme"}, Fixed{Anonymous: "pinned"}),
		"a verified caller stays in its bound tenant")
}
