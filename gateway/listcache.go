package gateway

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tools of a tools/list answer do not change from one call to the next
// for a caller (their definitions are built once per server), but encoding
// them, schemas and all, was most of the answer's cost, paid by every
// client at start and by every stateless HTTP session again. listCache
// keeps each distinct tool list encoded once.
type listCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

// maxCachedLists bounds the cache: one entry per distinct visible list
// (policy callers, views); beyond it the cache starts over.
const maxCachedLists = 256

// encodedTools returns the JSON array of tools, encoded at most once per
// distinct list of tool definitions (by identity: a rebuilt server gets
// its own entry).
func (c *listCache) encodedTools(tools []*mcp.Tool) ([]byte, error) {
	key := make([]byte, 0, len(tools)*12)
	for _, t := range tools {
		key = strconv.AppendUint(key, uint64(reflect.ValueOf(t).Pointer()), 16)
		key = append(key, ',')
	}
	c.mu.Lock()
	raw, ok := c.m[string(key)]
	c.mu.Unlock()
	if ok {
		return raw, nil
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedLists {
		c.m = map[string][]byte{}
	}
	c.m[string(key)] = raw
	c.mu.Unlock()
	return raw, nil
}

// encodedList is a tools/list answer whose tools are already encoded; the
// rest of the result (meta, cache hints, cursor, result type, which the SDK
// may still set) is encoded when the answer is.
type encodedList struct {
	*mcp.ListToolsResult
	tools []byte
}

// toolsTail is how the encoding of a result with an empty tool list ends:
// Tools is its last field.
var toolsTail = []byte(`"tools":[]}`)

// MarshalJSON encodes the result with an empty list and splices the
// encoded tools in.
func (e *encodedList) MarshalJSON() ([]byte, error) {
	rest := *e.ListToolsResult
	rest.Tools = []*mcp.Tool{}
	raw, err := json.Marshal(&rest)
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(raw, toolsTail) {
		// Another SDK layout: encode it all the ordinary way.
		return json.Marshal(e.ListToolsResult)
	}
	out := make([]byte, 0, len(raw)+len(e.tools))
	out = append(out, raw[:len(raw)-len(`[]}`)]...)
	out = append(out, e.tools...)
	return append(out, '}'), nil
}
