package frontend

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The front end decodes every message with go-sdk's JSON-RPC codec, as the
// daemon does, and routes by its id and method. What it forwards unchanged
// it forwards as the bytes it read (re-encoded only when they span lines);
// what it writes itself it encodes with the same codec.

type kind int

const (
	kindRequest kind = iota + 1
	kindNotification
	kindResponse
)

// message is one JSON-RPC message as the front end sees it.
type message struct {
	raw    []byte // one line
	msg    jsonrpc.Message
	kind   kind
	id     jsonrpc.ID
	key    string // the id, canonical (see idKey)
	method string
	params json.RawMessage
	// errCode is the error code of an error response (0 otherwise).
	errCode int64
}

var (
	errSyntax     = errors.New("parse error")
	errNotMessage = errors.New("not a JSON-RPC message")
)

// parse decodes a message with go-sdk's codec. A body that is not JSON is
// a parse error (errSyntax); valid JSON the codec refuses is errNotMessage.
func parse(body []byte) (message, error) {
	msg, err := jsonrpc.DecodeMessage(body)
	if err != nil {
		if !json.Valid(body) {
			return message{}, errSyntax
		}
		return message{}, errNotMessage
	}
	m := message{raw: body, msg: msg}
	switch v := msg.(type) {
	case *jsonrpc.Request:
		m.kind, m.id, m.method, m.params = kindNotification, v.ID, v.Method, v.Params
		if v.IsCall() {
			m.kind = kindRequest
		}
	case *jsonrpc.Response:
		m.kind, m.id = kindResponse, v.ID
		if e, ok := v.Error.(*jsonrpc.Error); ok {
			m.errCode = e.Code
		}
	}
	m.key = idKey(m.id)
	if bytes.IndexByte(body, '\n') >= 0 {
		// A Content-Length framed body may be pretty-printed; the stream
		// to the daemon is one message a line.
		if m.raw, err = jsonrpc.EncodeMessage(msg); err != nil {
			return message{}, errNotMessage
		}
	}
	return m, nil
}

// idKey is an id as the SDK reads it (a number truncated to an integer, a
// string as it is), as a map key; "" for no id.
func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return "n:" + strconv.FormatInt(v, 10)
	case string:
		return "s:" + v
	}
	return ""
}

// stringID is the id s.
func stringID(s string) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(s) // a string is always an id
	return id
}

// withID is m, a request or response, under another id.
func withID(m message, id jsonrpc.ID) jsonrpc.Message {
	switch v := m.msg.(type) {
	case *jsonrpc.Request:
		c := *v
		c.ID = id
		return &c
	case *jsonrpc.Response:
		c := *v
		c.ID = id
		return &c
	}
	return m.msg
}

// request is a request (id valid) or a notification.
func request(id jsonrpc.ID, method string, params json.RawMessage) *jsonrpc.Request {
	return &jsonrpc.Request{ID: id, Method: method, Params: params}
}

// response is a result or an error answer to id.
func response(id jsonrpc.ID, result json.RawMessage, rpcErr *jsonrpc.Error) *jsonrpc.Response {
	r := &jsonrpc.Response{ID: id, Result: result}
	if rpcErr != nil {
		r.Error = rpcErr
	}
	return r
}
