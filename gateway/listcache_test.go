package gateway

import (
	"encoding/json"
	"testing"

	"github.com/accordsai/accords-mcp/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// TestEncodedListIsTheOrdinaryEncoding: the answer with its tools encoded
// once is byte for byte what encoding the whole result gives, with meta,
// cache hints and a cursor set after it was made; the same list is encoded
// once, another list gets its own entry.
func TestEncodedListIsTheOrdinaryEncoding(t *testing.T) {
	var list []*mcp.Tool
	for _, d := range tools.Definitions()[:5] {
		list = append(list, d.MCPTool())
	}
	var c listCache
	raw, err := c.encodedTools(list)
	require.NoError(t, err)
	lr := &mcp.ListToolsResult{Tools: list}
	e := &encodedList{ListToolsResult: lr, tools: raw}
	lr.SetMeta(map[string]any{"k": "v"})
	lr.NextCursor = "next"
	lr.TTLMs = 5

	got, err := json.Marshal(e)
	require.NoError(t, err)
	want, err := json.Marshal(lr)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
	require.Equal(t, string(want), string(got), "byte for byte")

	again, err := c.encodedTools(list)
	require.NoError(t, err)
	require.Same(t, &raw[0], &again[0], "encoded once")
	other, err := c.encodedTools(list[:2])
	require.NoError(t, err)
	require.NotEqual(t, string(raw), string(other))
	require.Len(t, c.m, 2)

	empty, err := json.Marshal(&encodedList{ListToolsResult: &mcp.ListToolsResult{}, tools: []byte("[]")})
	require.NoError(t, err)
	plain, err := json.Marshal(&mcp.ListToolsResult{Tools: []*mcp.Tool{}})
	require.NoError(t, err)
	require.Equal(t, string(plain), string(empty))
}
