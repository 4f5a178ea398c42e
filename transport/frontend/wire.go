package frontend

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// The front end forwards the bytes of each message and reads only what it
// routes by: the id and the method (and, for a few requests, the params).
// Decoding and re-encoding every message with the SDK would cost more than
// the whole forwarding (the SDK allocates a large buffer per decode).

type kind int

const (
	kindRequest kind = iota + 1
	kindNotification
	kindResponse
)

// message is one JSON-RPC message as the front end sees it.
type message struct {
	raw    []byte // one line, compact
	kind   kind
	id     json.RawMessage // as sent
	key    string          // the id, canonical (see idKey)
	method string
	params json.RawMessage
	// errCode is the error code of an error response (0 otherwise).
	errCode int64
}

// probe is the part of a message the front end reads.
type probe struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Error   *struct {
		Code int64 `json:"code"`
	} `json:"error"`
}

var errNotMessage = errors.New("not a JSON-RPC message")

// parse reads a message the way the SDK would accept it: jsonrpc "2.0",
// a method (request or notification) or an id (response). A body that is
// not JSON is a parse error (errSyntax); valid JSON that is not a message
// is errNotMessage.
func parse(body []byte) (message, error) {
	var p probe
	if err := json.Unmarshal(body, &p); err != nil {
		if !json.Valid(body) {
			return message{}, errSyntax
		}
		return message{}, errNotMessage
	}
	if p.JSONRPC != "2.0" {
		return message{}, errNotMessage
	}
	m := message{raw: oneLine(body), id: p.ID, params: p.Params}
	hasID := len(p.ID) > 0 && !bytes.Equal(p.ID, []byte("null"))
	if hasID {
		key, ok := idKey(p.ID)
		if !ok {
			return message{}, errNotMessage
		}
		m.key = key
	}
	switch {
	case p.Method != nil && hasID:
		m.kind, m.method = kindRequest, *p.Method
	case p.Method != nil:
		m.kind, m.method = kindNotification, *p.Method
	case hasID:
		m.kind = kindResponse
		if p.Error != nil {
			m.errCode = p.Error.Code
		}
	default:
		return message{}, errNotMessage
	}
	return m, nil
}

var errSyntax = errors.New("parse error")

// oneLine makes a body fit one line of the newline-delimited stream to the
// daemon (a Content-Length framed body may be pretty-printed).
func oneLine(body []byte) []byte {
	if bytes.IndexByte(body, '\n') < 0 {
		return body
	}
	var b bytes.Buffer
	if err := json.Compact(&b, body); err != nil {
		return body
	}
	return b.Bytes()
}

// idKey is an id as the SDK sees it: a number is truncated to an integer
// (so the daemon's answer to 1.0 matches), a string is its value.
func idKey(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		if bytes.IndexByte(raw, '\\') < 0 {
			return "s:" + string(raw[1:len(raw)-1]), true
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return "s:" + s, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return "", false
	}
	return "n:" + strconv.FormatInt(int64(f), 10), true
}

// responsePrefix is how the daemon's SDK encodes every message: its
// fields in a fixed order, starting with the version tag.
var (
	responsePrefix = []byte(`{"jsonrpc":"2.0",`)
	idField        = []byte(`"id":`)
	resultField    = []byte(`,"result":`)
)

// parseDaemon reads a message from the daemon. Its answers to requests
// (almost everything it sends) are recognised from the first bytes, so a
// large result is forwarded without being scanned; anything else is
// parsed.
func parseDaemon(line []byte) (message, error) {
	if rest, ok := bytes.CutPrefix(line, responsePrefix); ok {
		if rest, ok := bytes.CutPrefix(rest, idField); ok {
			if end := idEnd(rest); end > 0 && bytes.HasPrefix(rest[end:], resultField) {
				if key, ok := idKey(rest[:end]); ok {
					return message{raw: line, kind: kindResponse, id: rest[:end], key: key}, nil
				}
			}
		}
	}
	return parse(line)
}

// idEnd is the length of the id token at the start of b: a number, or a
// string without escapes (0: not one of those).
func idEnd(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	if b[0] == '"' {
		for i := 1; i < len(b); i++ {
			switch b[i] {
			case '\\':
				return 0
			case '"':
				return i + 1
			}
		}
		return 0
	}
	i := 0
	for i < len(b) && (b[i] == '-' || b[i] == '.' || b[i] == 'e' || b[i] == 'E' || b[i] == '+' || (b[i] >= '0' && b[i] <= '9')) {
		i++
	}
	return i
}

// withID re-encodes a request or response under another id.
func withID(m message, id json.RawMessage) []byte {
	var full struct {
		Method string          `json:"method,omitempty"`
		Params json.RawMessage `json:"params,omitempty"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  json.RawMessage `json:"error,omitempty"`
	}
	_ = json.Unmarshal(m.raw, &full)
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method,omitempty"`
		Params  json.RawMessage `json:"params,omitempty"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   json.RawMessage `json:"error,omitempty"`
	}{"2.0", id, full.Method, full.Params, full.Result, full.Error})
	return out
}

// request encodes a request (id set) or notification.
func request(id json.RawMessage, method string, params json.RawMessage) []byte {
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", id, method, params})
	return out
}

// response encodes a result or an error answer to id.
func response(id json.RawMessage, result json.RawMessage, rpcErr any) []byte {
	out, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   any             `json:"error,omitempty"`
	}{"2.0", id, result, rpcErr})
	return out
}

func quoted(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
