// Package frontend is the stdio front end of an attached launch: it speaks
// MCP to the client on stdin/stdout (the same framing as a standalone
// server: newline-delimited or Content-Length, a malformed message answered
// with -32700 and the session going on) and forwards every message to the
// daemon that owns the database over an attached stream. The client's
// connection outlives the daemon: when the stream breaks, the requests in
// flight fail with a retryable answer, and the next request dials again
// (starting a daemon if none runs), replays the client's initialize on its
// behalf, swallows the answer, and goes through.
package frontend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/transport"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure Run.
type Options struct {
	// In and Out are the client's stdin and stdout.
	In  io.Reader
	Out io.Writer
	// Dial returns a new attached stream to the daemon (finding one, or
	// starting one). The error explains why none can be had.
	Dial func(ctx context.Context) (io.ReadWriteCloser, error)
	// Writes reports whether a tool changes state: such a call cut off by a
	// dying daemon may have run, so it is not reported as retryable.
	// Unknown names count as writes. Nil: every tool writes.
	Writes func(tool string) bool
	// SessionTools are tools whose calls shape the client's session on the
	// daemon (vaultclaw_toolset_enable): a new daemon gets each distinct
	// call again, in order, after the replayed initialize, so the client
	// keeps the tools it had.
	SessionTools []string
	// ReplayTimeout bounds the replayed initialize (default 30s).
	ReplayTimeout time.Duration
	// MaxMessageBytes caps one message from the client
	// (transport.DefaultMaxMessageBytes when <= 0).
	MaxMessageBytes int
	Logger          *slog.Logger
}

// Run serves the client until its input ends (after every request has been
// answered) or ctx ends. It dials the daemon before reading anything: a
// daemon that cannot be had is the returned error, so the launch can say
// why and exit non-zero.
func Run(ctx context.Context, o Options) error {
	if o.ReplayTimeout <= 0 {
		o.ReplayTimeout = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Writes == nil {
		o.Writes = func(string) bool { return true }
	}
	p := &proxy{o: o, ctx: ctx, client: transport.NewStdioFrames(o.In, o.Out, o.MaxMessageBytes), pending: map[string]*pending{},
		internal: map[string]chan message{}, fromDaemon: map[string]daemonReq{}, drained: make(chan struct{}, 1)}
	if _, err := p.upstream(ctx, ""); err != nil {
		return err
	}
	defer p.closeUpstream()
	// The reading goroutine forwards each message itself, in the order
	// the client sent them.
	readErr := make(chan error, 1)
	go func() {
		for {
			body, err := p.client.Next()
			if err != nil {
				readErr <- err
				return
			}
			if ctx.Err() != nil {
				return
			}
			p.fromClient(ctx, body)
		}
	}()
	select {
	case err := <-readErr:
		if !errors.Is(err, io.EOF) {
			return err
		}
		// End of input: answer what is in flight first. The client can
		// no longer answer the daemon's requests (an elicitation), and a
		// listen never ends on its own: both are settled first.
		p.inputEnded()
		p.waitDrained(ctx)
		p.waitAnswered(ctx)
		return nil
	case <-ctx.Done():
		return nil
	}
}

// pending is a client request forwarded to the daemon and not yet answered.
type pending struct {
	m   message
	gen int // the stream it went on (0: none yet)
}

// daemonReq is a request the daemon sent the client, under the id the
// client saw.
type daemonReq struct {
	gen int
	id  jsonrpc.ID
}

type proxy struct {
	o      Options
	ctx    context.Context
	client *transport.StdioFrames

	connMu sync.Mutex // one dial at a time

	mu      sync.Mutex
	up      *upstream
	gen     int
	pending map[string]*pending
	drained chan struct{} // signalled when pending empties
	// answering counts answers taken out of pending and not yet written
	// to the client: the end of input waits for them too, or the process
	// could exit with the last answer unwritten.
	answering sync.WaitGroup
	// init and setLevel are replayed on every new stream; initialized
	// says whether the client sent notifications/initialized.
	init, setLevel *message
	initialized    bool
	// shaping are the distinct params of the client's SessionTools calls,
	// oldest first, replayed after init on every new stream.
	shaping [][]byte
	// eof is set once the client's input has ended.
	eof bool
	// internal are the replayed requests' answer channels, by id key.
	internal map[string]chan message
	// fromDaemon maps the ids the client saw for the daemon's own requests
	// (sampling, roots, elicitation, ping) back to the daemon's ids; ids
	// are rewritten so two daemons' requests can never be confused.
	fromDaemon map[string]daemonReq
	seq        atomic.Int64
}

// upstream is one attached stream.
type upstream struct {
	conn io.ReadWriteCloser
	gen  int
	wmu  sync.Mutex
	once sync.Once
	done chan struct{}
}

// send writes one message line (one write, so messages never interleave).
func (u *upstream) send(line []byte) error {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	_, err := u.conn.Write(append(slices.Clip(line), '\n'))
	return err
}

// sendMsg encodes msg with go-sdk's codec and sends it. The front end
// builds messages only from what it decoded or marshaled, so encoding
// does not fail; an error is the stream's.
func (u *upstream) sendMsg(msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return u.send(data)
}

func (u *upstream) close() {
	u.once.Do(func() {
		close(u.done)
		u.conn.Close()
	})
}

const internalPrefix = "accords-frontend-"

// upstream returns the current stream, dialing a new one when there is
// none; a new stream gets the client's initialize replayed (unless the
// request that needs the stream is the initialize itself).
func (p *proxy) upstream(ctx context.Context, forMethod string) (*upstream, error) {
	p.connMu.Lock()
	defer p.connMu.Unlock()
	p.mu.Lock()
	up := p.up
	p.mu.Unlock()
	if up != nil {
		return up, nil
	}
	conn, err := p.o.Dial(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.gen++
	up = &upstream{conn: conn, gen: p.gen, done: make(chan struct{})}
	p.up = up
	init, level, initialized, shaping := p.init, p.setLevel, p.initialized, slices.Clone(p.shaping)
	p.mu.Unlock()
	go p.readUpstream(up)
	if forMethod == "initialize" || (init == nil && len(shaping) == 0) {
		return up, nil
	}
	// A client of 2026-07-28 never initializes (each request carries what
	// initialize did): only its shaping calls are replayed.
	if init != nil {
		if err := p.replay(ctx, up, init); err != nil {
			p.lost(up)
			return nil, fmt.Errorf("replaying the client's initialize to the new daemon: %w", err)
		}
		if initialized {
			if err := up.sendMsg(request(jsonrpc.ID{}, "notifications/initialized", json.RawMessage("{}"))); err != nil {
				p.lost(up)
				return nil, err
			}
		}
		if level != nil {
			if err := p.replay(ctx, up, level); err != nil {
				p.o.Logger.Warn("replaying logging/setLevel failed", "error", err.Error())
			}
		}
	}
	for _, params := range shaping {
		if err := p.replay(ctx, up, &message{method: "tools/call", params: params}); err != nil {
			p.o.Logger.Warn("replaying a call that shaped the session failed", "error", err.Error())
		}
	}
	if init != nil && initialized {
		// The new daemon may list other tools (another policy, another
		// version): the client lists again. Our stdio servers advertise
		// tools.listChanged. (A 2026-07-28 client hears of changes on its
		// subscriptions/listen stream only.)
		p.writeMsg(request(jsonrpc.ID{}, "notifications/tools/list_changed", nil))
	}
	p.o.Logger.Info("attached to a new daemon; the client's session was re-initialised on its behalf", "stream", up.gen)
	return up, nil
}

// replay sends m under an id of the front end's own and waits for (and
// swallows) the answer.
func (p *proxy) replay(ctx context.Context, up *upstream, m *message) error {
	name := internalPrefix + strconv.FormatInt(p.seq.Add(1), 10)
	key := "s:" + name
	ch := make(chan message, 1)
	p.mu.Lock()
	p.internal[key] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.internal, key)
		p.mu.Unlock()
	}()
	if err := up.sendMsg(request(stringID(name), m.method, m.params)); err != nil {
		return err
	}
	t := time.NewTimer(p.o.ReplayTimeout)
	defer t.Stop()
	select {
	case resp := <-ch:
		if resp.errCode != 0 {
			return fmt.Errorf("the daemon refused it (JSON-RPC error %d)", resp.errCode)
		}
		return nil
	case <-up.done:
		return errors.New("the daemon closed the stream")
	case <-t.C:
		return fmt.Errorf("no answer within %s", p.o.ReplayTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *proxy) closeUpstream() {
	p.mu.Lock()
	up := p.up
	p.mu.Unlock()
	if up != nil {
		up.close()
	}
}

// readUpstream delivers the daemon's messages until the stream breaks.
func (p *proxy) readUpstream(up *upstream) {
	r := bufio.NewReaderSize(up.conn, 64<<10)
	for {
		line, err := readLine(r)
		if err != nil {
			select {
			case <-up.done: // closed here
			default:
				p.o.Logger.Warn("the daemon's stream ended; requests in flight fail, the next one starts or finds a daemon", "stream", up.gen, "error", err.Error())
			}
			p.lost(up)
			return
		}
		if len(line) == 0 {
			continue
		}
		m, err := parse(line)
		if err != nil {
			p.o.Logger.Warn("undecodable message from the daemon dropped", "error", err.Error())
			continue
		}
		p.fromUpstream(up, m)
	}
}

// maxDaemonMessage bounds one message from the daemon (a large result:
// the daemon's own limits bound what it sends).
const maxDaemonMessage = 64 << 20

// readLine returns the next line without its newline.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxDaemonMessage {
			return nil, errors.New("message from the daemon over the size cap")
		}
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:len(buf)-1], nil
	}
}

func (p *proxy) fromUpstream(up *upstream, m message) {
	switch m.kind {
	case kindResponse:
		if strings.HasPrefix(m.key, "s:"+internalPrefix) {
			p.mu.Lock()
			ch := p.internal[m.key]
			p.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			return
		}
		p.mu.Lock()
		pr := p.pending[m.key]
		if pr == nil || pr.gen != up.gen {
			p.mu.Unlock()
			return
		}
		if m.errCode == transport.CodeNotStarted {
			// The daemon is going away and never started the call: send it
			// to the next one. The stream is retired (not closed: calls in
			// flight on it still get their answers), so the resend dials.
			pr.gen = 0
			if p.up == up {
				p.up = nil
			}
			p.mu.Unlock()
			go p.forward(p.ctx, pr)
			return
		}
		p.takeLocked(m.key)
		p.mu.Unlock()
		p.write(m.raw)
		p.answering.Done()
	case kindRequest:
		name := "accords-daemon-" + strconv.FormatInt(p.seq.Add(1), 10)
		p.mu.Lock()
		if p.eof {
			p.mu.Unlock()
			if err := up.sendMsg(response(m.id, nil, clientGone())); err != nil {
				p.lost(up)
			}
			return
		}
		p.fromDaemon["s:"+name] = daemonReq{gen: up.gen, id: m.id}
		p.mu.Unlock()
		p.writeMsg(withID(m, stringID(name)))
	case kindNotification:
		p.write(m.raw)
	}
}

func (p *proxy) write(body []byte) {
	if err := p.client.Write(body); err != nil {
		p.o.Logger.Warn("writing to the client failed", "error", err.Error())
	}
}

// writeMsg encodes msg with go-sdk's codec and writes it to the client.
func (p *proxy) writeMsg(msg jsonrpc.Message) {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		p.o.Logger.Warn("encoding a message to the client failed", "error", err.Error())
		return
	}
	p.write(data)
}

// takeLocked removes a pending request the caller now answers, and
// counts the answer until the caller's answering.Done; p.mu is held.
func (p *proxy) takeLocked(key string) {
	p.answering.Add(1)
	p.removeLocked(key)
}

// removeLocked forgets a pending request; p.mu is held.
func (p *proxy) removeLocked(key string) {
	delete(p.pending, key)
	if len(p.pending) == 0 {
		select {
		case p.drained <- struct{}{}:
		default:
		}
	}
}

// waitAnswered waits until every answer taken out of pending is written.
func (p *proxy) waitAnswered(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		p.answering.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// waitDrained waits until every request has been answered.
func (p *proxy) waitDrained(ctx context.Context) {
	for {
		p.mu.Lock()
		n := len(p.pending)
		p.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-p.drained:
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

func (p *proxy) fromClient(ctx context.Context, body []byte) {
	m, err := parse(body)
	if err != nil {
		if errors.Is(err, errSyntax) {
			p.client.ReplyError(nil, -32700, "parse error")
		} else {
			p.client.ReplyError(transport.RawID(body), -32600, "invalid request")
		}
		return
	}
	switch m.kind {
	case kindNotification:
		p.notification(m)
	case kindRequest:
		pr := &pending{m: m}
		p.mu.Lock()
		switch m.method {
		case "initialize":
			p.init = &m
		case "logging/setLevel":
			p.setLevel = &m
		case "tools/call":
			p.noteShaping(m.params)
		}
		p.pending[m.key] = pr
		p.mu.Unlock()
		p.forward(ctx, pr)
	case kindResponse:
		p.mu.Lock()
		dr, ok := p.fromDaemon[m.key]
		delete(p.fromDaemon, m.key)
		up := p.up
		p.mu.Unlock()
		if !ok || up == nil || up.gen != dr.gen {
			return // the daemon that asked is gone
		}
		if err := up.sendMsg(withID(m, dr.id)); err != nil {
			p.lost(up)
		}
	}
}

// maxShaping bounds the calls kept for replay (there are a handful of
// toolsets; a client repeating itself adds nothing).
const maxShaping = 64

// noteShaping keeps params of a SessionTools call for replay; p.mu is held.
func (p *proxy) noteShaping(params json.RawMessage) {
	if len(p.o.SessionTools) == 0 || len(p.shaping) >= maxShaping {
		return
	}
	var call struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(params, &call) != nil || !slices.Contains(p.o.SessionTools, call.Name) {
		return
	}
	// Without a progress token (the first call's means nothing to the
	// next daemon), compact, so the same call is kept once; the rest of
	// _meta stays (a 2026-07-28 request carries its protocol version there).
	var m map[string]json.RawMessage
	if json.Unmarshal(params, &m) != nil {
		return
	}
	if raw, ok := m["_meta"]; ok {
		var meta map[string]json.RawMessage
		if json.Unmarshal(raw, &meta) != nil {
			return
		}
		delete(meta, "progressToken")
		m["_meta"], _ = json.Marshal(meta)
		if len(meta) == 0 {
			delete(m, "_meta")
		}
	}
	norm, err := json.Marshal(m)
	if err != nil {
		return
	}
	for _, kept := range p.shaping {
		if bytes.Equal(kept, norm) {
			return
		}
	}
	p.shaping = append(p.shaping, norm)
}

// CodeClientGone is the JSON-RPC error the front end answers the daemon's
// requests with once the client's input has ended: nobody is left to
// answer them (a URL elicitation then ends with the plain handoff).
const CodeClientGone = -32012

func clientGone() *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeClientGone, Message: "the client's input has ended; it cannot answer"}
}

// inputEnded settles what only the client could have ended: the daemon's
// requests waiting for its answer are answered CodeClientGone, and its
// listens (subscriptions/listen, which last until cancelled) are cancelled
// on the daemon and owe the client no answer.
func (p *proxy) inputEnded() {
	p.mu.Lock()
	p.eof = true
	up := p.up
	var answers, cancels []jsonrpc.Message
	for key, dr := range p.fromDaemon {
		if up != nil && dr.gen == up.gen {
			answers = append(answers, response(dr.id, nil, clientGone()))
		}
		delete(p.fromDaemon, key)
	}
	for key, pr := range p.pending {
		if pr.m.method != "subscriptions/listen" {
			continue
		}
		if up != nil && pr.gen == up.gen {
			params, _ := json.Marshal(&mcp.CancelledParams{RequestID: pr.m.id.Raw(), Reason: "the client's input has ended"})
			cancels = append(cancels, request(jsonrpc.ID{}, "notifications/cancelled", params))
		}
		p.removeLocked(key)
	}
	p.mu.Unlock()
	if up == nil {
		return
	}
	for _, msg := range append(answers, cancels...) {
		if err := up.sendMsg(msg); err != nil {
			p.lost(up)
			return
		}
	}
}

// notification forwards a client notification to the current stream (a
// notification needs no answer, so none is dialed for it: the replay on
// the next stream carries notifications/initialized).
func (p *proxy) notification(m message) {
	p.mu.Lock()
	up := p.up
	if m.method == "notifications/initialized" {
		p.initialized = true
	}
	if m.method == "notifications/cancelled" && up != nil {
		var params mcp.CancelledParams
		_ = json.Unmarshal(m.params, &params)
		id, _ := jsonrpc.MakeID(params.RequestID) // not an id: no key
		key := idKey(id)
		if pr := p.pending[key]; key == "" || pr == nil || pr.gen != up.gen {
			up = nil // not in flight on this stream: nothing to cancel
		} else {
			// The client has given up on it: no answer is owed (a late
			// one is dropped), and the end of input does not wait for it.
			p.removeLocked(key)
		}
	}
	p.mu.Unlock()
	if up == nil {
		return
	}
	if err := up.send(m.raw); err != nil {
		p.lost(up)
	}
}

// forward sends pr on the current stream, dialing one if needed; when no
// daemon can be had the request fails at once (retryable: it never left).
func (p *proxy) forward(ctx context.Context, pr *pending) {
	for range 2 {
		up, err := p.upstream(ctx, pr.m.method)
		if err != nil {
			p.fail(pr, failNotSent, err)
			return
		}
		p.mu.Lock()
		if p.up != up {
			// Lost between the dial and now: try the next stream.
			p.mu.Unlock()
			continue
		}
		pr.gen = up.gen
		p.mu.Unlock()
		if err := up.send(pr.m.raw); err != nil {
			p.lost(up)
		}
		return
	}
	p.fail(pr, failNotSent, errors.New("the daemon's stream kept breaking"))
}

// lost retires a broken stream: every request in flight on it fails.
func (p *proxy) lost(up *upstream) {
	up.close()
	p.mu.Lock()
	if p.up == up {
		p.up = nil
	}
	var failed []*pending
	for key, pr := range p.pending {
		if pr.gen == up.gen {
			failed = append(failed, pr)
			p.takeLocked(key)
		}
	}
	for id, dr := range p.fromDaemon {
		if dr.gen == up.gen {
			delete(p.fromDaemon, id)
		}
	}
	p.mu.Unlock()
	for _, pr := range failed {
		p.answerFailure(pr, failInFlight, errors.New("the connection to the daemon was lost"))
		p.answering.Done()
	}
}

type failKind int

const (
	// failNotSent: no daemon could be reached; the request never left.
	failNotSent failKind = iota
	// failInFlight: the daemon went away while the request was in flight.
	failInFlight
)

func (p *proxy) fail(pr *pending, kind failKind, cause error) {
	p.mu.Lock()
	if p.pending[pr.m.key] != pr {
		p.mu.Unlock()
		return
	}
	p.takeLocked(pr.m.key)
	p.mu.Unlock()
	p.answerFailure(pr, kind, cause)
	p.answering.Done()
}

// answerFailure answers a request the daemon did not: a tools/call gets an
// MCP_NETWORK_ERROR envelope (retryable, unless a state-changing call may
// have run: then outcome_unknown), anything else a JSON-RPC error.
func (p *proxy) answerFailure(pr *pending, kind failKind, cause error) {
	var call struct {
		Name      string `json:"name"`
		Arguments struct {
			IdempotencyKey string `json:"idempotency_key"`
		} `json:"arguments"`
	}
	isCall := pr.m.method == "tools/call"
	if isCall {
		_ = json.Unmarshal(pr.m.params, &call)
	}
	e := daemonError(kind, cause, call.Name, kind == failInFlight && isCall && p.o.Writes(call.Name))
	if call.Arguments.IdempotencyKey != "" {
		e.With("idempotency_key", call.Arguments.IdempotencyKey)
	}
	if isCall {
		p.writeMsg(response(pr.m.id, toolResult(e), nil))
		return
	}
	data, _ := json.Marshal(map[string]any{"code": e.Code, "retryable": e.Retryable, "reason": e.Details["reason"]})
	p.writeMsg(response(pr.m.id, nil, &jsonrpc.Error{Code: transport.CodeDaemonLost, Message: e.Message, Data: data}))
}

// Reasons in the failure details.
const (
	ReasonDaemonUnavailable = "daemon_unavailable"
	ReasonConnectionLost    = "daemon_connection_lost"
)

func daemonError(kind failKind, cause error, tool string, mayHaveRun bool) *apperr.Error {
	if kind == failNotSent {
		e := apperr.New(apperr.CodeNetwork, "the accords-mcp daemon could not be reached, so the request was not sent: %v; retry it", cause)
		e.Retryable = true
		return e.With("reason", ReasonDaemonUnavailable)
	}
	if mayHaveRun {
		e := apperr.New(apperr.CodeNetwork, "the accords-mcp daemon went away while %s was running: it may or may not have taken effect; check before retrying (the next request starts or finds a daemon)", tool)
		return e.With("reason", ReasonConnectionLost).With("outcome_unknown", true).With("tool", tool)
	}
	e := apperr.New(apperr.CodeNetwork, "the accords-mcp daemon went away while the request was in flight (%v); retry it: the next request starts or finds a daemon", cause)
	e.Retryable = true
	e.With("reason", ReasonConnectionLost)
	if tool != "" {
		e.With("tool", tool)
	}
	return e
}

// toolResult is a tools/call result carrying the failure envelope, as
// every tool returns it: structured content, its text (D22), and isError.
func toolResult(e *apperr.Error) json.RawMessage {
	env, _ := json.Marshal(envelope.Failure(e))
	out, _ := json.Marshal(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": envelope.Text(env)}},
		"structuredContent": json.RawMessage(env),
		"isError":           true,
	})
	return out
}
