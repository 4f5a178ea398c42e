package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RawHTTP is the leanest Streamable HTTP client there can be, as RawClient
// is over stdio: a request is encoded before its clock starts, POSTed on a
// kept-alive connection with the headers a 2025-11-25 client sends, and its
// answer (a JSON body or the SSE event holding it) is read whole before the
// clock stops and decoded after. On this two-core machine the go-sdk client
// takes about as much CPU per call as the server, so the SDK sessions'
// throughput is the client's; this one's is the server's.
type RawHTTP struct {
	endpoint string
	bearer   string
	client   *http.Client
	next     atomic.Int64
}

// NewRawHTTP returns a client of endpoint keeping up to conns connections
// alive, after an initialize round trip that checks the server answers.
func NewRawHTTP(ctx context.Context, endpoint, bearer string, conns int) (*RawHTTP, error) {
	c := &RawHTTP{endpoint: endpoint, bearer: bearer, client: &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: conns + 4, IdleConnTimeout: 90 * time.Second},
	}}
	init := map[string]any{"protocolVersion": RawProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "accords-bench-raw", "version": "1"}}
	if _, _, err := c.roundTrip(ctx, "initialize", init); err != nil {
		return nil, fmt.Errorf("initialize over HTTP: %w", err)
	}
	return c, nil
}

// Close drops the kept-alive connections.
func (c *RawHTTP) Close() { c.client.CloseIdleConnections() }

func (c *RawHTTP) roundTrip(ctx context.Context, method string, params any) (time.Duration, json.RawMessage, error) {
	id := c.next.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method != "initialize" {
		req.Header.Set("MCP-Protocol-Version", RawProtocol)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	t0 := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	got, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	d := time.Since(t0)
	if err != nil {
		return d, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return d, nil, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, strings.TrimSpace(string(got)))
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if got, err = sseAnswer(got, id); err != nil {
			return d, nil, fmt.Errorf("%s: %w", method, err)
		}
	}
	var a rawAnswer
	if err := json.Unmarshal(got, &a); err != nil {
		return d, nil, fmt.Errorf("%s: answer is not JSON: %w", method, err)
	}
	if a.ID == nil || *a.ID != id {
		return d, nil, fmt.Errorf("%s: answer for another request", method)
	}
	if a.Error != nil {
		return d, nil, fmt.Errorf("%s: %s", method, a.Error.Message)
	}
	return d, a.Result, nil
}

// sseAnswer returns the data of the event in an SSE body that answers id
// (the server may send notifications on the same stream first).
func sseAnswer(body []byte, id int64) ([]byte, error) {
	for event := range bytes.SplitSeq(body, []byte("\n\n")) {
		var data []byte
		for line := range bytes.SplitSeq(event, []byte("\n")) {
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
			}
		}
		var probe struct {
			ID *int64 `json:"id"`
		}
		if len(data) > 0 && json.Unmarshal(data, &probe) == nil && probe.ID != nil && *probe.ID == id {
			return data, nil
		}
	}
	return nil, fmt.Errorf("no answer in the event stream")
}

// Do makes one call of op and returns its time and outcome code, as
// RawClient.Do does.
func (c *RawHTTP) Do(ctx context.Context, op Op, args map[string]any, envelopes bool) (time.Duration, string) {
	if args == nil {
		args = map[string]any{}
	}
	d, result, err := c.roundTrip(ctx, "tools/call", map[string]any{"name": op.Tool, "arguments": args})
	if err != nil {
		return d, CodeTransport
	}
	return d, outcome(result, envelopes)
}

// RunRawHTTPMixed runs the weighted mix through c as RunMixed runs it
// through the SDK sessions of s (whose tool list decides what is skipped).
func RunRawHTTPMixed(ctx context.Context, c *RawHTTP, s *Server, clients int, ops map[string]Op, weights []Weight, lim Limits, seed uint64) *Recorder {
	m := newMix(s, ops, weights)
	if m.total == 0 {
		rec := NewRecorder()
		rec.Stop()
		return rec
	}
	return runRawHTTP(ctx, c, clients, m.pick, lim, seed)
}

// RunRawHTTP calls op from clients goroutines through c until lim.Calls
// calls have been made or lim.Duration has passed, with the arguments Run
// would make from the same seed.
func RunRawHTTP(ctx context.Context, c *RawHTTP, clients int, op Op, lim Limits, seed uint64) *Recorder {
	return runRawHTTP(ctx, c, clients, func(*rand.Rand) Op { return op }, lim, seed)
}

// runRawHTTP is the calling loop of both: pick chooses each call's
// operation.
func runRawHTTP(ctx context.Context, c *RawHTTP, clients int, pick func(*rand.Rand) Op, lim Limits, seed uint64) *Recorder {
	rec := NewRecorder()
	var issued atomic.Int64
	deadline := time.Now().Add(lim.Duration)
	var wg sync.WaitGroup
	for wi := range max(clients, 1) {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(wi)+1))
			for ctx.Err() == nil && time.Now().Before(deadline) && issued.Add(1) <= int64(lim.Calls) {
				op := pick(r)
				d, code := c.Do(ctx, op, op.Args(r), true)
				rec.Add(d, code)
			}
		})
	}
	wg.Wait()
	rec.Stop()
	return rec
}
