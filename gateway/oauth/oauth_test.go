package oauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMetadataURLFollowsRFC9728(t *testing.T) {
	assert.Equal(t, "https://mcp.example.com/.well-known/oauth-protected-resource/v1/mcp", MetadataURL("https://mcp.example.com/v1/mcp"))
	assert.Equal(t, "https://mcp.example.com/.well-known/oauth-protected-resource", MetadataURL("https://mcp.example.com/"))
	assert.Equal(t, []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/v1/mcp"}, MetadataPaths("https://mcp.example.com/v1/mcp"))
	assert.Equal(t, []string{"/.well-known/oauth-protected-resource"}, MetadataPaths("https://mcp.example.com"))
}

func TestScopesAndGroupsClaimShapes(t *testing.T) {
	assert.Equal(t, []string{"a", "b"}, scopes(map[string]any{"scope": "a  b"}))
	assert.Equal(t, []string{"a", "b"}, scopes(map[string]any{"scp": []any{"a", 7, "b"}}))
	assert.Equal(t, []string{"a"}, scopes(map[string]any{"scp": "a"}))
	assert.Nil(t, strs(map[string]any{"x": 1}["x"]))
}

// A provider that cannot be discovered leaves tokens unchecked (never
// accepted) and is asked again only after a pause, so a flood of requests
// does not become a flood of discovery requests.
func TestUnavailableProviderIsRetriedAfterAPause(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	v := New(Config{Issuer: srv.URL, Audience: "https://mcp.example.com/v1/mcp", CallerClaim: "sub", Now: func() time.Time { return now }})
	for range 3 {
		_, err := v.Verify(context.Background(), "a.b.c")
		require.ErrorIs(t, err, ErrUnavailable)
	}
	assert.EqualValues(t, 1, hits.Load())
	now = now.Add(rediscoverAfter + time.Second)
	_, err := v.Verify(context.Background(), "a.b.c")
	require.ErrorIs(t, err, ErrUnavailable)
	assert.EqualValues(t, 2, hits.Load())
}
