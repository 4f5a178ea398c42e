package wire

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Encode is jsonrpc.EncodeMessage with the same bytes. A successful
// response, nearly every message a server writes, is framed around its
// result as it stands: the SDK marshaled the result already (compact JSON),
// and EncodeMessage would run it through encoding/json's validating
// compaction once more, a byte-at-a-time scan that cost about 50 µs of a
// search answer's 6 KB. Anything else, a result holding a newline (which
// compact JSON never does, and which would break line framing) and an id
// that needs escaping go to EncodeMessage.
func Encode(msg jsonrpc.Message) ([]byte, error) { return AppendEncode(nil, msg) }

// AppendEncode appends msg's encoding, Encode's bytes, to dst: a transport
// that frames the message (an SSE event) writes it once into its own
// buffer.
func AppendEncode(dst []byte, msg jsonrpc.Message) ([]byte, error) {
	r, ok := msg.(*jsonrpc.Response)
	if !ok || r.Error != nil || len(r.Result) == 0 || bytes.IndexByte(r.Result, '\n') >= 0 {
		return appendEncoded(dst, msg)
	}
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	start := len(dst)
	buf := slices.Grow(dst, len(head)+24+len(mid)+len(r.Result)+1)
	buf = append(buf, head...)
	switch id := r.ID.Raw().(type) {
	case int64:
		buf = strconv.AppendInt(buf, id, 10)
	case string:
		if !plainID(id) {
			return appendEncoded(buf[:start], msg)
		}
		buf = append(buf, '"')
		buf = append(buf, id...)
		buf = append(buf, '"')
	default:
		// No id (EncodeMessage leaves it out) or one this package does not
		// know how the SDK spells.
		return appendEncoded(buf[:start], msg)
	}
	buf = append(buf, mid...)
	buf = append(buf, r.Result...)
	return append(buf, '}'), nil
}

// appendEncoded appends the SDK's own encoding of msg.
func appendEncoded(dst []byte, msg jsonrpc.Message) ([]byte, error) {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return dst, err
	}
	if dst == nil {
		return data, nil
	}
	return append(dst, data...), nil
}

// plainID reports whether id is printable ASCII that JSON writes as it is.
func plainID(id string) bool {
	for i := range len(id) {
		if c := id[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
