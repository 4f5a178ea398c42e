package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Push notifications (notifications/tasks). A client asks for them with
// subscriptions/listen {notifications: {taskIds: [...]}}. go-sdk decodes
// that request into a type without taskIds and has no way to send a
// notification it does not know, so the extension answers such a listen
// below the SDK: on stream transports (stdio, the daemon's socket, in
// memory) by wrapping the connection, on Streamable HTTP by answering the
// POST with its own event stream. A listen without taskIds is the SDK's.

const (
	methodListen       = "subscriptions/listen"
	notifyAcknowledged = "notifications/subscriptions/acknowledged"
	notifyCancelled    = "notifications/cancelled"
	metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"
)

// listenRequest is the part of subscriptions/listen the extension reads.
type listenRequest struct {
	Meta          map[string]json.RawMessage `json:"_meta"`
	Notifications struct {
		TaskIDs []string `json:"taskIds"`
	} `json:"notifications"`
}

// taskListen decodes a subscriptions/listen call naming task ids.
func taskListen(msg jsonrpc.Message) (*jsonrpc.Request, listenRequest, bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != methodListen || !req.IsCall() {
		return nil, listenRequest{}, false
	}
	var p listenRequest
	if json.Unmarshal(req.Params, &p) != nil || len(p.Notifications.TaskIDs) == 0 {
		return nil, listenRequest{}, false
	}
	return req, p, true
}

// declares reports whether capabilities JSON declares the extension.
func declares(raw json.RawMessage) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return false
	}
	_, ok := c.Extensions[ExtensionID]
	return ok
}

// listener serves one listen: it sends the acknowledgement, the current
// state of each agreed task, then each change, until stop.
type listener struct {
	x      *Extension
	id     jsonrpc.ID
	agreed []string // task ids, as the client named them
	send   func(jsonrpc.Message) error
}

// open authorises the ids for p (unknown and foreign ones are left out
// of the acknowledgement, as the extension lets a server agree to a
// subset) and sends the acknowledgement and the current states.
func (x *Extension) open(ctx context.Context, id jsonrpc.ID, ids []string, send func(jsonrpc.Message) error) (*listener, <-chan task.Task, func(), map[string]string) {
	p, owner := x.ownerOf(ctx)
	l := &listener{x: x, id: id, send: send}
	refs := map[string]string{} // ref -> id
	var current []task.Task
	for _, tid := range ids {
		t, err := x.o.Store.Get(tid, owner)
		if err != nil || refs[t.Ref] != "" {
			continue
		}
		if x.o.Gate != nil && x.o.Gate.Allowed(p, t.Tool) != nil {
			continue
		}
		refs[t.Ref] = tid
		l.agreed = append(l.agreed, tid)
		current = append(current, t)
	}
	var keys []string
	for r := range refs {
		keys = append(keys, r)
	}
	ch, unsubscribe := x.subscribe(keys)
	agreed := l.agreed
	if agreed == nil {
		agreed = []string{}
	}
	_ = l.notify(notifyAcknowledged, map[string]any{"notifications": map[string]any{"taskIds": agreed}})
	for _, t := range current {
		_ = l.notify(NotificationStatus, x.wire(refs[t.Ref], t))
	}
	return l, ch, unsubscribe, refs
}

// notify sends a notification on the listen's stream, tagged with its
// subscription id.
func (l *listener) notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	meta, _ := m["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[metaSubscriptionID] = l.id.Raw()
	m["_meta"] = meta
	raw, _ = json.Marshal(m)
	return l.send(&jsonrpc.Request{Method: method, Params: raw})
}

// serve forwards task changes until ctx ends.
func (l *listener) serve(ctx context.Context, ch <-chan task.Task, refs map[string]string) {
	for {
		select {
		case <-ctx.Done():
			return
		case t := <-ch:
			if err := l.notify(NotificationStatus, l.x.wire(refs[t.Ref], t)); err != nil {
				return
			}
		}
	}
}

// result is the listen's final answer once the client cancels it.
func (l *listener) result() *jsonrpc.Response {
	raw, _ := json.Marshal(map[string]any{"_meta": map[string]any{metaSubscriptionID: l.id.Raw()}})
	return &jsonrpc.Response{ID: l.id, Result: raw}
}

func rpcError(id jsonrpc.ID, err error) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: err}
}

// Transport wraps a stream transport so task listens are served on it;
// caller is the context of the connection's caller (stdio: the local
// caller; an attached launch: the local caller with the launch's
// environment session).
func (x *Extension) Transport(t mcp.Transport, caller func() context.Context) mcp.Transport {
	return &listenTransport{Transport: t, x: x, caller: caller}
}

type listenTransport struct {
	mcp.Transport
	x      *Extension
	caller func() context.Context
}

func (t *listenTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &listenConn{Connection: c, t: t, listens: map[string]context.CancelFunc{}}, nil
}

// listenConn serves task listens on a connection and hands everything
// else to the SDK.
type listenConn struct {
	mcp.Connection
	t *listenTransport

	mu       sync.Mutex
	declared bool // the session's initialize declared the extension
	listens  map[string]context.CancelFunc
	wg       sync.WaitGroup
}

func idKey(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

func (c *listenConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok {
			switch req.Method {
			case "initialize":
				var p struct {
					Capabilities json.RawMessage `json:"capabilities"`
				}
				if json.Unmarshal(req.Params, &p) == nil {
					c.mu.Lock()
					c.declared = declares(p.Capabilities)
					c.mu.Unlock()
				}
			case notifyCancelled:
				if c.cancelListen(req) {
					continue
				}
			}
		}
		req, p, ok := taskListen(msg)
		if !ok {
			return msg, nil
		}
		c.startListen(req, p)
	}
}

// cancelListen ends the listen a notifications/cancelled names, if it is
// one of ours.
func (c *listenConn) cancelListen(req *jsonrpc.Request) bool {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return false
	}
	c.mu.Lock()
	cancel, ok := c.listens[idKey(id)]
	c.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

func (c *listenConn) startListen(req *jsonrpc.Request, p listenRequest) {
	send := func(m jsonrpc.Message) error { return c.Write(context.Background(), m) }
	c.mu.Lock()
	declared := c.declared || declares(p.Meta["io.modelcontextprotocol/clientCapabilities"])
	c.mu.Unlock()
	if !declared {
		_ = send(rpcError(req.ID, errMissingCapability()))
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.listens[idKey(req.ID)] = cancel
	c.mu.Unlock()
	l, ch, unsubscribe, refs := c.t.x.open(c.t.caller(), req.ID, p.Notifications.TaskIDs, send)
	c.wg.Go(func() {
		defer unsubscribe()
		l.serve(ctx, ch, refs)
		c.mu.Lock()
		delete(c.listens, idKey(req.ID))
		c.mu.Unlock()
		_ = send(l.result())
	})
}

func (c *listenConn) Close() error {
	c.mu.Lock()
	for _, cancel := range c.listens {
		cancel()
	}
	c.mu.Unlock()
	err := c.Connection.Close()
	c.wg.Wait()
	return err
}

// HTTP serves task listens posted to the Streamable HTTP endpoint as an
// event stream on the POST (stateless HTTP has no other stream), until
// the client closes it; other requests go to next. principal names the
// request's caller, as the gateway resolved it.
func (x *Extension) HTTP(next http.Handler, principal func(*http.Request) caller.Principal, maxBody int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, int64(maxBody)+1))
		switch {
		case err != nil:
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		case len(body) > maxBody:
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		msg, err := jsonrpc.DecodeMessage(body)
		if err != nil {
			next.ServeHTTP(w, r)
			return
		}
		req, p, ok := taskListen(msg)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		x.serveHTTPListen(w, r, req, p, principal(r))
	})
}

func (x *Extension) serveHTTPListen(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, p listenRequest, pr caller.Principal) {
	write := func(m jsonrpc.Message) error {
		data, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(append([]byte("event: message\ndata: "), data...), '\n', '\n')); err != nil {
			return err
		}
		return http.NewResponseController(w).Flush()
	}
	if !declares(p.Meta["io.modelcontextprotocol/clientCapabilities"]) {
		w.Header().Set("Content-Type", "application/json")
		data, _ := jsonrpc.EncodeMessage(rpcError(req.ID, errMissingCapability()))
		_, _ = w.Write(data)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	var mu sync.Mutex
	send := func(m jsonrpc.Message) error {
		mu.Lock()
		defer mu.Unlock()
		return write(m)
	}
	l, ch, unsubscribe, refs := x.open(caller.With(r.Context(), pr), req.ID, p.Notifications.TaskIDs, send)
	defer unsubscribe()
	l.serve(r.Context(), ch, refs)
}
