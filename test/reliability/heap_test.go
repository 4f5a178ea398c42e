//go:build reliability

package reliability

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// HeapBudget is what one request may add to the heap (the bound).
const HeapBudget = 64 << 20

const heapMetric = "/memory/classes/heap/objects:bytes"

// heapNow is the heap occupied by objects, live and not yet swept.
func heapNow() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakDuring runs fn and returns the heap measured after a collection
// before it, and the largest heap seen while it ran (sampled every half
// millisecond).
//
// The binary runs with a soft memory limit (GOMEMLIMIT, 96 MiB by
// default), so the collector reclaims a request's garbage before the heap
// grows past it; what it cannot reclaim is what the request holds live,
// and that is what ran servers out of memory. So the limit is set at the
// baseline plus the budget while fn runs: garbage cannot push the heap
// over it, only live memory can.
func peakDuring(fn func()) (baseline, peak uint64) {
	runtime.GC()
	baseline = heapNow()
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(baseline) + HeapBudget))
	var max atomic.Uint64
	max.Store(baseline)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			if h := heapNow(); h > max.Load() {
				max.Store(h)
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	fn()
	close(stop)
	<-done
	if h := heapNow(); h > max.Load() {
		max.Store(h)
	}
	return baseline, max.Load()
}

// stdioClient talks to App.ServeStdio over pipes.
type stdioClient struct {
	in  *io.PipeWriter
	out *bufio.Reader
}

// roundTrip writes line (which ends in a newline: the test must not copy
// a huge message inside the measurement) and reads the answer.
func (c *stdioClient) roundTrip(t *testing.T, line []byte) map[string]any {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := c.in.Write(line)
		errc <- err
	}()
	answer, err := c.out.ReadString('\n')
	require.NoError(t, err)
	require.NoError(t, <-errc)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(answer), &m), answer)
	return m
}

func rpcCall(id int, tool string, args any) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	return append(b, '\n')
}

func bundle(id, title string, entries int) map[string]any {
	es := make([]any, entries)
	for i := range es {
		es[i] = map[string]any{"entry_id": fmt.Sprintf("e%d", i), "entry_type": "recipe.plan.v1", "title": fmt.Sprintf("Entry %d of %s", i, id),
			"tags": []any{"bulk", "generated"}, "plan": map[string]any{"type": "connector.execution.plan.v1", "steps": []any{}}}
	}
	return map[string]any{"type": "accords.cookbook.bundle.v1", "cookbook_id": id, "version": "1.0.0", "title": title, "entries": es}
}

// TestNoRequestRaisesTheHeapBeyondItsBudget sends the inputs that once cost
// gigabytes (a 31 MB search query, a 30 MB title, a 100,000-entry bundle,
// a megabyte of tiny values, deep nesting, huge headers) over stdio and
// HTTP, and checks that none raises the heap more than 64 MiB above the
// baseline while it runs, and that each is answered.
func TestNoRequestRaisesTheHeapBeyondItsBudget(t *testing.T) {
	a := testenv.Open(t, testenv.Config(t))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.ServeStdio(ctx, inR, outW); outW.Close() }()
	defer func() {
		cancel()
		inW.Close()
		go func() { _, _ = io.Copy(io.Discard, outR) }()
		assert.NoError(t, <-served)
	}()
	sc := &stdioClient{in: inW, out: bufio.NewReaderSize(outR, 1<<20)}
	sc.roundTrip(t, []byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"))
	_, err := inW.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"))
	require.NoError(t, err)
	srv := httptest.NewServer(a.HTTPHandler())
	defer srv.Close()

	// Stored at the limits first, so the listing below is as large as a
	// catalog can make one call.
	full := bundle("full", strings.Repeat("T", 512), 1000)
	require.Contains(t, sc.roundTrip(t, rpcCall(1, "vaultclaw_cookbook_upsert", map[string]any{"bundle": full})), "result")

	tinyValues := func(n int) string { return "[" + strings.Repeat("0,", n/2) + "0]" }
	type input struct {
		name string
		// send sends the input and describes the answer; the input is
		// built before the measurement starts.
		send func(t *testing.T) func() string
	}
	viaStdio := func(build func() []byte) func(t *testing.T) func() string {
		return func(t *testing.T) func() string {
			msg := build()
			return func() string {
				m := sc.roundTrip(t, msg)
				b, _ := json.Marshal(m)
				if len(b) > 200 {
					b = b[:200]
				}
				return string(b)
			}
		}
	}
	viaHTTP := func(build func() []byte, header map[string]string) func(t *testing.T) func() string {
		return func(t *testing.T) func() string {
			body := build()
			return func() string {
				req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/mcp", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json")
				for k, v := range header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				out, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
				return fmt.Sprintf("%d %s", resp.StatusCode, out)
			}
		}
	}
	call := func(id int, tool string, args func() any) func() []byte {
		return func() []byte { return rpcCall(id, tool, args()) }
	}
	rawCall := func(id int, tool, argsPrefix string, inner func() string, argsSuffix string) func() []byte {
		return func() []byte {
			return []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s%s%s}}`+"\n", id, tool, argsPrefix, inner(), argsSuffix))
		}
	}
	inputs := []input{
		{"stdio: 31 MB search query", viaStdio(call(2, "vaultclaw_recipes_search", func() any { return map[string]any{"query": strings.Repeat("word ", 31<<20/5)} }))},
		{"stdio: 7 MB search query", viaStdio(call(3, "vaultclaw_recipes_search", func() any { return map[string]any{"query": strings.Repeat("word ", 7<<20/5)} }))},
		{"http: 996 KiB search query", viaHTTP(call(4, "vaultclaw_recipes_search", func() any { return map[string]any{"query": strings.Repeat("word ", 996<<10/5)} }), nil)},
		{"stdio: 30 MB title", viaStdio(call(5, "vaultclaw_cookbook_upsert", func() any { return map[string]any{"bundle": bundle("t30", strings.Repeat("T", 30<<20), 1)} }))},
		{"stdio: 7 MB title", viaStdio(call(6, "vaultclaw_cookbook_upsert", func() any { return map[string]any{"bundle": bundle("t7", strings.Repeat("T", 7<<20), 1)} }))},
		{"stdio: 100,000-entry bundle", viaStdio(call(7, "vaultclaw_cookbook_import", func() any { return map[string]any{"bundle": bundle("many", "many", 100000)} }))},
		{"stdio: 25,000-entry bundle", viaStdio(call(8, "vaultclaw_cookbook_import", func() any { return map[string]any{"bundle": bundle("some", "some", 25000)} }))},
		{"stdio: 4 MB bundle of 1,000 entries", viaStdio(call(17, "vaultclaw_cookbook_upsert", func() any {
			b := bundle("wide", "wide", 1000)
			for _, e := range b["entries"].([]any) {
				e.(map[string]any)["x_notes"] = strings.Repeat("n", 3800) // just under 4 MiB in all
			}
			return map[string]any{"bundle": b}
		}))},
		{"stdio: 16 MB of tiny values", viaStdio(rawCall(9, "vaultclaw_connector_validate", `{"request":`, func() string { return tinyValues(16 << 20) }, "}"))},
		{"stdio: 7 MB of tiny values", viaStdio(rawCall(16, "vaultclaw_connector_validate", `{"request":`, func() string { return tinyValues(7 << 20) }, "}"))},
		{"http: 1 MB of tiny values", viaHTTP(rawCall(10, "vaultclaw_template_render", `{"cookbook_id":"full","template_id":"x","inputs":{"v":`, func() string { return tinyValues(1<<20 - 200) }, "}}"), nil)},
		{"stdio: 6 MB of nesting", viaStdio(rawCall(11, "vaultclaw_connector_validate", `{"request":`, func() string { return strings.Repeat("[", 3<<20) + strings.Repeat("]", 3<<20) }, "}"))},
		{"http: 40 KB tenant header", viaHTTP(call(12, "vaultclaw_session_status", func() any { return map[string]any{} }), map[string]string{"X-Tenant-Id": strings.Repeat("t", 40<<10)})},
		{"stdio: list a catalog at its limits", viaStdio(call(13, "vaultclaw_cookbooks_list", func() any { return map[string]any{} }))},
		{"http: list a catalog at its limits", viaHTTP(call(14, "vaultclaw_cookbooks_list", func() any { return map[string]any{} }), nil)},
		{"stdio: 16 KiB route request", viaStdio(call(15, "vaultclaw_route_resolve", func() any {
			return map[string]any{"request_text": strings.Repeat("send the weather in boston ", 16<<10/27)}
		}))},
	}
	for _, in := range inputs {
		var answer string
		send := in.send(t)
		base, peak := peakDuring(func() { answer = send() })
		grown := int64(peak) - int64(base)
		t.Logf("%-40s heap +%6.1f MiB  %s", in.name, float64(grown)/(1<<20), answer)
		assert.LessOrEqual(t, grown, int64(HeapBudget), "%s raised the heap by %d MiB", in.name, grown>>20)
	}
	// The listing stays the same size after all that: nothing oversized
	// was stored.
	env := mcptest.PostCall(t, srv.URL+"/v1/mcp", "vaultclaw_cookbooks_list", map[string]any{"limit": 1000}, nil)
	ids := []string{}
	for _, it := range env.Object()["items"].([]any) {
		ids = append(ids, it.(map[string]any)["cookbook_id"].(string))
	}
	assert.NotContains(t, ids, "t30")
	assert.NotContains(t, ids, "t7")
	assert.NotContains(t, ids, "many")
	assert.NotContains(t, ids, "some")
	assert.Contains(t, ids, "wide", "a bundle at the size limit is stored")
}
