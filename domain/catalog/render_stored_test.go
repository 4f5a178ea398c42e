package catalog

import (
	"strings"
	"sync"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRenderFollowsTheStoredTemplate: a render after the same version was
// overwritten, or after a newer version became the latest, uses what is
// stored now, never the template an earlier render decoded.
func TestRenderFollowsTheStoredTemplate(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, mustBundle(t, netHTTP), "")
	req := RenderRequest{CookbookID: "net.http", TemplateID: "tpl_get", Inputs: map[string]any{"url": "u"}}
	res, err := e.svc.Render(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "GET", res.Rendered["request"].(map[string]any)["method"])

	mustUpsert(t, e.svc, mustBundle(t, strings.Replace(netHTTP, `"request":{"method":"GET"}`, `"request":{"method":"HEAD"}`, 1)), PolicyOverwrite)
	res, err = e.svc.Render(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "HEAD", res.Rendered["request"].(map[string]any)["method"])

	v2 := strings.Replace(strings.Replace(netHTTP, `"version":"1.0.0"`, `"version":"2.0.0"`, 1), `"request":{"method":"GET"}`, `"request":{"method":"PUT"}`, 1)
	mustUpsert(t, e.svc, mustBundle(t, v2), "")
	res, err = e.svc.Render(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "PUT", res.Rendered["request"].(map[string]any)["method"])
	assert.Equal(t, "2.0.0", res.SourceRef.Version)
	req.Version = "1.0.0"
	res, err = e.svc.Render(t.Context(), req)
	require.NoError(t, err)
	assert.Equal(t, "HEAD", res.Rendered["request"].(map[string]any)["method"])

	// The version is gone: not found, not the cached template.
	_, err = e.svc.Delete(t.Context(), "net.http", "1.0.0")
	require.NoError(t, err)
	_, err = e.svc.Render(t.Context(), req)
	assert.Equal(t, apperr.CodeCatalogNotFound, apperr.As(err).Code)
}

// TestCachedTemplatesAreNotChangedByRenders: renders of one cached
// template, concurrently and with inputs bound into the result, leave the
// template as stored (run with -race), and its input schema still applies.
func TestCachedTemplatesAreNotChangedByRenders(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, mustBundle(t, netHTTP), "")
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				res, err := e.svc.Render(t.Context(), RenderRequest{CookbookID: "net.http", TemplateID: "schema", Inputs: map[string]any{"n": float64(w*100 + i + 1)}})
				if !assert.NoError(t, err) {
					return
				}
				req := res.Rendered["request"].(map[string]any)
				assert.Equal(t, float64(w*100+i+1), req["n"])
				assert.Equal(t, "x", req["s"])
				req["n"] = "changed by the caller"
			}
		})
	}
	wg.Wait()
	_, err := e.svc.Render(t.Context(), RenderRequest{CookbookID: "net.http", TemplateID: "schema", Inputs: map[string]any{"n": float64(0)}})
	assert.Equal(t, apperr.CodeTemplateInputInvalid, apperr.As(err).Code)
	res, err := e.svc.Render(t.Context(), RenderRequest{CookbookID: "net.http", TemplateID: "schema", Inputs: map[string]any{"n": float64(5)}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"n": float64(5), "s": "x"}, res.Rendered["request"])
}
