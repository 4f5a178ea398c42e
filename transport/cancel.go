package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Why an HTTP tool call's context ended early.
var (
	// ErrClientGone: the client closed the connection before the answer.
	ErrClientGone = errors.New("the HTTP client went away before the answer")
	// ErrCancelledByClient: the client sent notifications/cancelled.
	ErrCancelledByClient = errors.New("the client cancelled the request")
)

// httpCallKey carries the context of one HTTP POST into the MCP handler.
// The go-sdk detaches handler contexts from the request for protocols
// before 2026-07-28 (values pass, cancellation does not), so the call
// middleware re-attaches it: a call ends when its POST ends.
type httpCallKey struct{}

func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// inflight finds the running HTTP calls a notifications/cancelled names.
// Stateless HTTP has no session, so a cancellation arrives on its own POST;
// it is matched to a call by the client's identity (bearer token digest,
// tenant header, address) and the JSON-RPC id. When two running calls
// share that key the cancellation is ambiguous and cancels neither: a
// client must never cancel another client's work.
type inflight struct {
	mu    sync.Mutex
	calls map[string][]*inflightCall
}

type inflightCall struct {
	cancel context.CancelCauseFunc
}

func newInflight() *inflight { return &inflight{calls: map[string][]*inflightCall{}} }

// callKey identifies a JSON-RPC id, as go-sdk reads it (1 and 1.0 are the
// same id), within one client identity.
func callKey(r *http.Request, id jsonrpc.ID) string {
	h := sha256.New()
	for _, part := range []string{r.Header.Get("Authorization"), caller.TenantFromHeader(r.Header), remoteIP(r), r.Header.Get("Mcp-Session-Id"), fmt.Sprintf("%T:%v", id.Raw(), id.Raw())} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// add registers a running call; the returned func removes it.
func (f *inflight) add(key string, cancel context.CancelCauseFunc) func() {
	c := &inflightCall{cancel: cancel}
	f.mu.Lock()
	f.calls[key] = append(f.calls[key], c)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		list := f.calls[key]
		for i, x := range list {
			if x == c {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(f.calls, key)
		} else {
			f.calls[key] = list
		}
	}
}

// cancel ends the one call registered under key; it reports whether it did.
func (f *inflight) cancel(key string) bool {
	f.mu.Lock()
	list := f.calls[key]
	var c *inflightCall
	if len(list) == 1 {
		c = list[0]
	}
	f.mu.Unlock()
	if c == nil {
		return false
	}
	c.cancel(ErrCancelledByClient)
	return true
}

// cancelledID is the id of the request a notifications/cancelled names.
func cancelledID(req *jsonrpc.Request) (jsonrpc.ID, bool) {
	if req == nil || req.IsCall() || req.Method != "notifications/cancelled" {
		return jsonrpc.ID{}, false
	}
	var p mcp.CancelledParams
	if json.Unmarshal(req.Params, &p) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil && id.IsValid()
}

// CallContext is receiving middleware that ends a call's context when the
// HTTP POST carrying it ends (client gone, or cancelled by a
// notifications/cancelled), with the reason as the context's cause. Over
// stdio it does nothing: the SDK cancels calls itself there.
func CallContext() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			carrier, ok := ctx.Value(httpCallKey{}).(context.Context)
			if !ok {
				return next(ctx, method, req)
			}
			ctx, cancel := context.WithCancelCause(ctx)
			defer cancel(nil)
			stop := context.AfterFunc(carrier, func() {
				cause := context.Cause(carrier)
				if errors.Is(cause, context.Canceled) {
					cause = ErrClientGone
				}
				cancel(cause)
			})
			defer stop()
			return next(ctx, method, req)
		}
	}
}
