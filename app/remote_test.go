package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The remote tools as wired by the app: configuration limits reach the
// fetcher, installs land in the app's catalog and are searchable, and an
// install reports MCP progress when the client asks for it.
func TestRemoteSourcesThroughTheApp(t *testing.T) {
	t.Parallel()
	bundle := []byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"hello","version":"1.0.0","title":"Hello",
		"entries":[{"entry_id":"greet","entry_type":"template.verb.v1","title":"Greet a friend warmly","base_request":{"text":""},
		"bindings":[{"target_path":"/text","input_key":"text"}]}]}`)
	big := append([]byte(`{"pad":"`), []byte(strings.Repeat("x", 600))...)
	big = append(big, []byte(`"}`)...)
	sum := sha256.Sum256(bundle)
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/index.json":
			_, _ = w.Write([]byte(`{"type":"accords.cookbook.index.v1","items":[
				{"cookbook_id":"hello","version":"1.0.0","download_url":"` + srvURL + `/hello.json","sha256":"` + hex.EncodeToString(sum[:]) + `"},
				{"cookbook_id":"big","version":"1.0.0","download_url":"` + srvURL + `/big.json"}]}`))
		case "/hello.json":
			_, _ = w.Write(bundle)
		case "/big.json":
			_, _ = w.Write(big)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	srvURL = srv.URL

	a := testenv.Open(t, testenv.Config(t, "ACCORDS_MCP_REMOTE_MAX_BUNDLE_BYTES=512"))
	var mu sync.Mutex
	var progress []string
	ctx := context.Background()
	cs := mcptest.Connect(t, a.MCPServer(), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Message)
			mu.Unlock()
		},
	})

	call := func(name string, args map[string]any, token any) mcptest.Envelope {
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		if token != nil {
			p.SetProgressToken(token)
		}
		return mcptest.CallWith(t, ctx, cs, p)
	}

	env := call("vaultclaw_catalog_source_upsert", map[string]any{"source": map[string]any{"source_id": "ex", "index_url": srv.URL + "/index.json"}}, nil)
	require.True(t, env.OK, "%+v", env.Error)

	env = call("vaultclaw_catalog_sources_list", nil, nil)
	require.True(t, env.OK)
	limits := env.Data.(map[string]any)["limits"].(map[string]any)
	assert.EqualValues(t, 512, limits["max_bundle_bytes"], "configuration reaches the service")

	env = call("vaultclaw_cookbook_remote_install", map[string]any{"source_id": "ex", "cookbook_id": "big"}, nil)
	require.False(t, env.OK)
	assert.Equal(t, "MCP_CATALOG_REMOTE_FETCH_FAILED", env.Error.Code)
	assert.Equal(t, "remote bundle exceeds the size limit of 512 bytes", env.Error.Message)

	env = call("vaultclaw_cookbook_remote_install", map[string]any{"source_id": "ex", "cookbook_id": "hello"}, "p1")
	require.True(t, env.OK, "%+v", env.Error)
	integrity := env.Data.(map[string]any)["install"].(map[string]any)["integrity"].(map[string]any)
	assert.Equal(t, true, integrity["verified"])
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) == 4
	}, 5*time.Second, 10*time.Millisecond)
	mu.Lock()
	assert.Equal(t, []string{"remote index fetched", "bundle downloaded", "bundle verified and validated", "bundle stored"}, progress)
	mu.Unlock()

	env = call("vaultclaw_recipes_search", map[string]any{"query": "greet friend"}, nil)
	require.True(t, env.OK, "%+v", env.Error)
	items := env.Data.(map[string]any)["items"].([]any)
	require.NotEmpty(t, items)
	assert.Equal(t, "hello", items[0].(map[string]any)["cookbook_id"])
}
