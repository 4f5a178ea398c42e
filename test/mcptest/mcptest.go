// Package mcptest connects MCP clients to servers and decodes tool results
// into the envelope every tool returns, as a client sees it. It is imported
// only by tests, so it depends on nothing of this module: any package's
// tests, the tools and gateway packages' own included, can use it.
package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// CallTimeout bounds Call; a test that waits longer passes its own context
// to CallWith.
const CallTimeout = time.Minute

// Envelope is a tool's {ok, data, error, meta} result, decoded from the
// wire without the server's types, so a change to the JSON shows up here.
type Envelope struct {
	OK    bool           `json:"ok"`
	Data  any            `json:"data"`
	Error *Error         `json:"error"`
	Meta  map[string]any `json:"meta"`

	// Raw is the whole envelope as generic JSON.
	Raw map[string]any `json:"-"`
	// Result is the tool result the envelope came in (content items,
	// isError, _meta); nil for a reply read from a bare HTTP post.
	Result *mcp.CallToolResult `json:"-"`
}

// Error is the error part of an envelope.
type Error struct {
	Code      string         `json:"code"`
	Category  string         `json:"category"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	VaultCode string         `json:"vault_code"`
	Details   map[string]any `json:"details"`
}

// Code is the error code, "" on success.
func (e Envelope) Code() string {
	if e.Error == nil {
		return ""
	}
	return e.Error.Code
}

// Object is the data as a JSON object, nil when it is not one.
func (e Envelope) Object() map[string]any {
	m, _ := e.Data.(map[string]any)
	return m
}

// Details are the error details, nil on success.
func (e Envelope) Details() map[string]any {
	if e.Error == nil {
		return nil
	}
	return e.Error.Details
}

// ErrNoEnvelope marks a tool result that does not carry a well-formed
// envelope, as opposed to a call whose exchange failed.
var ErrNoEnvelope = errors.New("no envelope")

// Decode reads the envelope of a tool result and checks what every tool
// result promises: structured content, the same JSON as the first text
// item, isError exactly when ok is false, and an error object then. On an
// error the envelope is zero.
func Decode(res *mcp.CallToolResult) (Envelope, error) {
	if res == nil || res.StructuredContent == nil {
		return Envelope{}, fmt.Errorf("%w: no structured content", ErrNoEnvelope)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return Envelope{}, fmt.Errorf("%w: %w", ErrNoEnvelope, err)
	}
	var env Envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return Envelope{}, fmt.Errorf("%w: %w: %s", ErrNoEnvelope, err, raw)
	}
	if err := json.Unmarshal(raw, &env.Raw); err != nil || env.Raw == nil {
		return Envelope{}, fmt.Errorf("%w: not an object: %s", ErrNoEnvelope, raw)
	}
	if !env.OK && env.Error == nil {
		return Envelope{}, fmt.Errorf("%w: ok is false without an error: %s", ErrNoEnvelope, raw)
	}
	env.Result = res
	if len(res.Content) == 0 {
		return Envelope{}, fmt.Errorf("%w: no content", ErrNoEnvelope)
	}
	text, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return Envelope{}, fmt.Errorf("%w: first content item is %T, not text", ErrNoEnvelope, res.Content[0])
	}
	if want := envelope.Text(raw); text.Text != want || len(res.Content) != 1 {
		return Envelope{}, fmt.Errorf("%w: the text is not the envelope's text (D22): %s, want %s", ErrNoEnvelope, text.Text, want)
	}
	if res.IsError == env.OK {
		return Envelope{}, fmt.Errorf("%w: isError %v with ok %v", ErrNoEnvelope, res.IsError, env.OK)
	}
	return env, nil
}

// Caller is what calls tools: an *mcp.ClientSession or a *Session.
type Caller interface {
	CallTool(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error)
}

// TryCall calls a tool and decodes its envelope without failing a test,
// for goroutines and for tests that expect the exchange itself to fail.
// The error wraps ErrNoEnvelope when a result came but holds no envelope.
func TryCall(ctx context.Context, cs Caller, name string, args any) (Envelope, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return Envelope{}, err
	}
	return Decode(res)
}

// Call calls a tool with CallTimeout and returns its envelope; a failed
// exchange or a malformed result fails the test.
func Call(t testing.TB, cs Caller, name string, args any) Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	return CallWith(t, ctx, cs, &mcp.CallToolParams{Name: name, Arguments: args})
}

// CallWith is Call with the caller's context and parameters (a progress
// token, a long wait).
func CallWith(t testing.TB, ctx context.Context, cs Caller, p *mcp.CallToolParams) Envelope {
	t.Helper()
	res, err := cs.CallTool(ctx, p)
	require.NoError(t, err, "call %s", p.Name)
	env, err := Decode(res)
	require.NoError(t, err, "call %s", p.Name)
	require.NoError(t, ValidateOutput(ctx, cs, p.Name, res), "call %s", p.Name)
	return env
}

// RequireOK fails the test unless env is a success whose data is an
// object, and returns that object.
func RequireOK(t testing.TB, env Envelope) map[string]any {
	t.Helper()
	require.True(t, env.OK, "unexpected failure: %+v", env.Error)
	m, ok := env.Data.(map[string]any)
	require.True(t, ok, "data is %T, not an object", env.Data)
	return m
}

// RequireCode fails the test unless env is a failure with code, and
// returns its error.
func RequireCode(t testing.TB, env Envelope, code string) *Error {
	t.Helper()
	require.False(t, env.OK, "expected %s, got success: %v", code, env.Data)
	require.Equal(t, code, env.Error.Code, "%+v", env.Error)
	return env.Error
}

// ToolNames lists the tools the session sees, in the server's order.
func ToolNames(t testing.TB, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// Session is a client connected in memory to a server.
type Session struct {
	*mcp.ClientSession
	server *mcp.ServerSession
	once   sync.Once
	err    error
}

// Close closes the client and waits until the server side has finished,
// so whatever the server holds can be closed next. It is idempotent.
func (s *Session) Close() error {
	s.once.Do(func() {
		s.err = s.ClientSession.Close()
		_ = s.server.Wait()
	})
	return s.err
}

// Connect connects a client to srv over in-memory transports; opts may be
// nil. The session closes when the test ends, or earlier with Close.
func Connect(t testing.TB, srv *mcp.Server, opts *mcp.ClientOptions) *Session {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := newClient(opts).Connect(ctx, ct, nil)
	require.NoError(t, err)
	s := &Session{ClientSession: cs, server: ss}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcptest", Version: "1"}, opts)
}

// HTTPOptions say how ConnectHTTP reaches the server.
type HTTPOptions struct {
	// Headers are set on every request: a tenant, a bearer token.
	Headers map[string]string
	// Transport carries the requests; http.DefaultTransport when nil.
	Transport http.RoundTripper
	// StandaloneSSE opens the GET stream for server-initiated messages;
	// off by default, since most tests only call tools.
	StandaloneSSE bool
	// Client configures the client (a progress handler); may be nil.
	Client *mcp.ClientOptions
}

// ConnectHTTP connects a Streamable HTTP client to endpoint (for example
// an httptest server's URL + "/v1/mcp"). It never retries, so a failure
// surfaces in the test. The session closes when the test ends.
func ConnectHTTP(t testing.TB, endpoint string, o HTTPOptions) *mcp.ClientSession {
	t.Helper()
	base := o.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rt := base
	if len(o.Headers) > 0 {
		rt = headerTransport{base: base, headers: o.Headers}
	}
	cs, err := newClient(o.Client).Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt},
		DisableStandaloneSSE: !o.StandaloneSSE, MaxRetries: -1,
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.headers {
		r.Header.Set(k, v)
	}
	return h.base.RoundTrip(r)
}
