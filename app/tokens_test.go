package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tiktoken-go/tokenizer"
)

// What the model reads at the start of every conversation (D23): each
// listed tool's name, description and input schema, and the server's
// instructions, counted with the o200k tokenizer; and what the client
// receives, the whole tools/list answer.
const (
	startTokenBudget  = 2194
	defaultListBudget = 16 * 1024
)

// modelVisible counts the tokens of l's names, descriptions, input schemas
// and instructions.
func modelVisible(t *testing.T, l listing) (total, instructions int) {
	t.Helper()
	enc, err := tokenizer.Get(tokenizer.O200kBase)
	require.NoError(t, err)
	count := func(s string) int {
		n, err := enc.Count(s)
		require.NoError(t, err)
		return n
	}
	for _, raw := range l.tools {
		var tl struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		require.NoError(t, json.Unmarshal(raw, &tl))
		total += count(tl.Name) + count(tl.Description) + count(string(tl.InputSchema))
	}
	instructions = count(l.instructions)
	return total + instructions, instructions
}

// TestStartTokens holds the default start to its budgets and prints the
// figures of the default and the full list.
func TestStartTokens(t *testing.T) {
	var b strings.Builder
	def := listTools(t)
	defTokens, instr := modelVisible(t, def)
	all := listTools(t, "ACCORDS_MCP_TOOLSETS=all")
	allTokens, _ := modelVisible(t, all)
	fmt.Fprintf(&b, "  default: %2d tools, model-visible %5d tokens (instructions %d), tools/list %6d bytes\n", len(def.perTool), defTokens, instr, def.bytes)
	fmt.Fprintf(&b, "  all:     %2d tools, model-visible %5d tokens, tools/list %6d bytes\n", len(all.perTool), allTokens, all.bytes)
	t.Log("start (o200k):\n" + b.String())
	assert.LessOrEqual(t, defTokens, startTokenBudget, "the default start is over its token budget")
	assert.LessOrEqual(t, def.bytes, defaultListBudget, "the default tools/list is over its byte budget")
}
