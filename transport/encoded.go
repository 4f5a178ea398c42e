package transport

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/accordsai/accords-mcp/transport/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodedResult is a tool result with its JSON already written. go-sdk
// encodes a CallToolResult in three layers, each re-scanning (compacting)
// what the layer inside it wrote: the structured content, each text item,
// then the whole result; the text holds the envelope again, so an answer's
// bytes were scanned four times on top of our own encoding of the envelope.
// Written here, they are scanned once, by the encoder that frames the
// response. Embedding the result keeps it an mcp.Result.
type encodedResult struct {
	*mcp.CallToolResult
	raw []byte
	// metaKeys is how many _meta keys raw holds. raw already carries the
	// server identity go-sdk adds after the middleware; a _meta that
	// changed after the encoding is left to the SDK's encoding.
	metaKeys int
}

func (r encodedResult) MarshalJSON() ([]byte, error) {
	if len(r.Meta) != r.metaKeys {
		return json.Marshal(r.CallToolResult)
	}
	return r.raw, nil
}

// encodeResults writes the JSON of the tool results the adapter and the
// gateway make (structured content as encoded JSON, text items only,
// _meta) the way go-sdk would. A request of the per-request protocol
// (2026-07-28 and later, named in its _meta) gets what go-sdk makes of a
// result there: "resultType":"complete" and impl, the server's identity,
// in _meta. Any other result, and any other call (no version in its _meta
// and a session whose initialize named none, or one from
// wire.PerRequestVersion on), keeps the SDK's encoding.
func encodeResults(impl *mcp.Implementation) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil || method != "tools/call" {
				return res, err
			}
			ctr, ok := res.(*mcp.CallToolResult)
			if !ok || ctr == nil {
				return res, err
			}
			complete := perRequestProtocol(req)
			if !complete && !olderThanMultiRoundTrip(req) {
				return res, err
			}
			if complete {
				// What the SDK would add after this middleware; it adds
				// nothing when the key is there.
				if _, ok := ctr.Meta[mcp.MetaKeyServerInfo]; !ok && impl != nil {
					if ctr.Meta == nil {
						ctr.Meta = mcp.Meta{}
					}
					ctr.Meta[mcp.MetaKeyServerInfo] = impl
				}
			}
			if raw, ok := encodeToolResult(ctr, complete); ok {
				return encodedResult{CallToolResult: ctr, raw: raw, metaKeys: len(ctr.Meta)}, nil
			}
			return res, err
		}
	}
}

// perRequestProtocol reports what go-sdk decides from a call's _meta: a
// protocol version from wire.PerRequestVersion on there makes the SDK
// mark the result complete and name the server in its _meta.
func perRequestProtocol(req mcp.Request) bool {
	p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if !ok || p == nil {
		return false
	}
	v, ok := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return ok && v >= wire.PerRequestVersion
}

func olderThanMultiRoundTrip(req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion != "" && p.ProtocolVersion < wire.PerRequestVersion
}

// encodeToolResult returns what go-sdk's encoding of r is, or false when r
// holds anything beyond what it handles. go-sdk's inner layers encode with
// HTML escaping and its outer one without, so structured content must
// already be escaped (json.Marshal's output is) for the bytes to match;
// content that is not is left to the SDK.
func encodeToolResult(r *mcp.CallToolResult, complete bool) ([]byte, bool) {
	sc, ok := r.StructuredContent.(json.RawMessage)
	if !ok || len(sc) == 0 || r.InputRequests != nil || r.RequestState != "" || len(r.Content) == 0 {
		return nil, false
	}
	if bytes.ContainsAny(sc, "<>&") || bytes.Contains(sc, []byte("\u2028")) || bytes.Contains(sc, []byte("\u2029")) {
		return nil, false
	}
	size := len(sc) + 64
	for _, c := range r.Content {
		tc, ok := c.(*mcp.TextContent)
		if !ok || tc.Meta != nil || tc.Annotations != nil {
			return nil, false
		}
		size += len(tc.Text) + len(tc.Text)/8 + 32
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	if len(r.Meta) > 0 {
		// The gateway's call id and receipt: a small map, encoded as the
		// SDK's inner layer encodes it.
		meta, err := json.Marshal(map[string]any(r.Meta))
		if err != nil {
			return nil, false
		}
		b = append(b, `"_meta":`...)
		b = append(b, meta...)
		b = append(b, ',')
	}
	b = append(b, `"content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		text, err := json.Marshal(c.(*mcp.TextContent).Text)
		if err != nil {
			return nil, false
		}
		b = append(b, `{"type":"text","text":`...)
		b = append(b, text...)
		b = append(b, '}')
	}
	b = append(b, `],"structuredContent":`...)
	b = append(b, sc...)
	if r.IsError {
		b = append(b, `,"isError":true`...)
	}
	if complete {
		b = append(b, `,"resultType":"complete"`...)
	}
	return append(b, '}'), true
}
