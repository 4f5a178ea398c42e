package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RawHTTP is the leanest Streamable HTTP client there can be, as RawClient
// is over stdio: a request is encoded before its clock starts, POSTed on a
// kept-alive connection with the headers a 2025-11-25 client sends, and its
// answer (a JSON body or the SSE event holding it) is read whole before the
// clock stops and decoded after, once. On this two-core machine the go-sdk client
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

// post sends one request and returns the time until its answer was read
// whole into into, and the answer: the body of a JSON answer, or the SSE
// body.
func (c *RawHTTP) post(ctx context.Context, into *bytes.Buffer, method string, params any) (time.Duration, int64, []byte, bool, error) {
	id := c.next.Add(1)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return 0, id, nil, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, id, nil, false, err
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
		return 0, id, nil, false, err
	}
	_, err = into.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	got := into.Bytes()
	d := time.Since(t0)
	if err != nil {
		return d, id, nil, false, err
	}
	if resp.StatusCode != http.StatusOK {
		return d, id, nil, false, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, strings.TrimSpace(string(got)))
	}
	return d, id, got, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"), nil
}

func (c *RawHTTP) roundTrip(ctx context.Context, method string, params any) (time.Duration, json.RawMessage, error) {
	d, id, got, stream, err := c.post(ctx, new(bytes.Buffer), method, params)
	if err != nil {
		return d, nil, err
	}
	var a rawAnswer
	found := false
	for data := range answerData(got, stream) {
		if json.Unmarshal(data, &a) == nil && a.ID != nil && *a.ID == id && a.Method == "" {
			found = true
			break
		}
		a = rawAnswer{}
	}
	switch {
	case !found:
		return d, nil, fmt.Errorf("%s: no answer to the request", method)
	case a.Error != nil:
		return d, nil, fmt.Errorf("%s: %s", method, a.Error.Message)
	}
	return d, a.Result, nil
}

// answerData yields the JSON-RPC messages of an answer: a JSON body, or the
// data of an SSE body's events from the last to the first (a call's answer
// ends the stream; notifications about it come first).
func answerData(body []byte, stream bool) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		if !stream {
			yield(body)
			return
		}
		var events [][]byte
		for rest := body; len(rest) > 0; {
			i := bytes.Index(rest, []byte("\n\n"))
			if i < 0 {
				events = append(events, rest)
				break
			}
			events = append(events, rest[:i])
			rest = rest[i+2:]
		}
		for _, event := range slices.Backward(events) {
			if data := eventData(event); len(data) > 0 && !yield(data) {
				return
			}
		}
	}
}

// eventData joins an SSE event's data lines; one line, the usual case, is
// returned in place.
func eventData(event []byte) []byte {
	var data []byte
	lines := 0
	for line := range bytes.SplitSeq(event, []byte("\n")) {
		v, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue
		}
		v = bytes.TrimPrefix(v, []byte(" "))
		switch lines++; lines {
		case 1:
			data = v
		case 2:
			data = append(append(append([]byte(nil), data...), '\n'), v...)
		default:
			data = append(append(data, '\n'), v...)
		}
	}
	return data
}

// callAnswer is what the bare client reads of a tools/call answer, decoded
// in one pass that builds nothing else, by segmentio's decoder (the go-sdk's
// own), which skips the fields it does not keep several times faster than
// encoding/json. Reading the message, then its result, then the result into
// maps, as outcome does, cost this client about as much CPU a call as the
// server spends answering it, on the two cores the two share.
type callAnswer struct {
	ID     *int64 `json:"id"`
	Method string `json:"method"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	Result *struct {
		IsError           bool `json:"isError"`
		StructuredContent *struct {
			OK    *bool `json:"ok"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		} `json:"structuredContent"`
	} `json:"result"`
}

// code is the answer's outcome as outcome reads it, and whether this form
// could tell (an answer of another shape is read the general way).
func (a *callAnswer) code(envelopes bool) (string, bool) {
	switch {
	case a.Error != nil:
		return CodeTransport, true
	case a.Result == nil:
		return "", false
	case !envelopes:
		if a.Result.IsError {
			return "is_error", true
		}
		return "", true
	}
	sc := a.Result.StructuredContent
	switch {
	case sc == nil || sc.OK == nil || (!*sc.OK && sc.Error == nil):
		return CodeNoEnvelope, true
	case *sc.OK:
		return "", true
	default:
		return sc.Error.Code, true
	}
}

// Do makes one call of op and returns its time and outcome code, as
// RawClient.Do does.
func (c *RawHTTP) Do(ctx context.Context, op Op, args map[string]any, envelopes bool) (time.Duration, string) {
	if args == nil {
		args = map[string]any{}
	}
	buf := answerBuffers.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); answerBuffers.Put(buf) }()
	d, id, got, stream, err := c.post(ctx, buf, "tools/call", map[string]any{"name": op.Tool, "arguments": args})
	if err != nil {
		return d, CodeTransport
	}
	return d, readCall(got, stream, id, envelopes)
}

// answerBuffers hold answers while they are read: nothing of one is kept
// after its outcome is known.
var answerBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readCall returns the outcome of the answer to call id in an answer body.
func readCall(got []byte, stream bool, id int64, envelopes bool) string {
	for data := range answerData(got, stream) {
		var a callAnswer
		if decodeExact(data, &a) == nil {
			if a.ID == nil || *a.ID != id || a.Method != "" {
				continue
			}
			if code, ok := a.code(envelopes); ok {
				return code
			}
		}
		// A message of a shape this form does not expect: read as outcome
		// reads any answer.
		var r rawAnswer
		if decodeExact(data, &r) != nil || r.ID == nil || *r.ID != id || r.Method != "" {
			continue
		}
		if r.Error != nil {
			return CodeTransport
		}
		return outcome(r.Result, envelopes)
	}
	return CodeTransport
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
