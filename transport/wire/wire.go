// Package wire decodes the JSON-RPC messages a server reads, with the
// results of the SDK's decoder at a fraction of its allocations.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// PerRequestVersion is the first protocol version whose requests name their
// version, client and capabilities in _meta and whose results carry
// "resultType"; what differs from that version on is decided by comparing
// against it (versions are dates, so they order as strings).
const PerRequestVersion = "2026-07-28"

// Decode is jsonrpc.DecodeMessage for the messages a server reads
// most, requests and notifications, with the same result. The SDK's decoder
// allocates a 32 KiB read buffer for every value it decodes, twice per
// message (the message, then its method), which made message decoding about
// a third of a cheap call's allocations. Responses (answers to the server's
// own rare requests) and anything this decoder does not take apart go to
// the SDK's decoder, so every error and edge case stays the SDK's.
func Decode(data []byte) (jsonrpc.Message, error) {
	if !utf8.Valid(data) || nestedDeeperThan(data, sdkMaxDepth) {
		return jsonrpc.DecodeMessage(data)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return jsonrpc.DecodeMessage(data)
	}
	rawMethod, isRequest := fields["method"]
	if !isRequest || !isVersion2(fields["jsonrpc"]) {
		return jsonrpc.DecodeMessage(data)
	}
	var method string
	if err := json.Unmarshal(rawMethod, &method); err != nil || !plainString(rawMethod) {
		return jsonrpc.DecodeMessage(data)
	}
	var id jsonrpc.ID
	if raw, ok := fields["id"]; ok {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return jsonrpc.DecodeMessage(data)
		}
		var err error
		if id, err = jsonrpc.MakeID(v); err != nil {
			return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
	}
	params := fields["params"]
	if len(params) == 0 {
		params = nil
	}
	return &jsonrpc.Request{Method: method, ID: id, Params: params}, nil
}

// isVersion2 reports whether raw is the JSON string "2.0" written plainly
// (an escaped spelling goes to the SDK's decoder).
func isVersion2(raw json.RawMessage) bool { return bytes.Equal(raw, []byte(`"2.0"`)) }

// plainString reports whether raw is a JSON string without escapes, whose
// value every decoder reads the same.
func plainString(raw json.RawMessage) bool {
	return len(raw) >= 2 && raw[0] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0
}

// sdkMaxDepth is the nesting the SDK's decoder accepts; deeper messages go
// to it so that they are refused as before.
const sdkMaxDepth = 1000

// nestedDeeperThan reports whether objects and arrays in data nest deeper
// than limit, skipping string contents.
func nestedDeeperThan(data []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			if depth++; depth > limit {
				return true
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return false
}
