package app_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/accordsai/accords-mcp/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What every agent pays on every start: the tools/list result, compact
// JSON, as a client receives it.
const (
	// fullListBudget is the whole list (45 tools, ACCORDS_MCP_TOOLSETS=all)
	// with every tool's client hints in _meta: 30 KB. The default list has
	// its own, smaller budget (tokens_test.go).
	fullListBudget = 30 * 1024
	// dynamicStartBudget is a dynamic session's first list.
	dynamicStartBudget = 5 * 1024
	// descriptionMax bounds a tool's description; its first sentence says
	// what the tool does and when to use it.
	descriptionMax = 300
)

type listing struct {
	bytes   int
	perTool map[string]int
	// tools are the listed tools as sent; instructions is initialize's.
	tools        []json.RawMessage
	instructions string
}

// listTools opens an app with env and returns the result of its stdio
// tools/list exactly as sent: the raw JSON-RPC result of a session that
// initialized as today's clients do.
func listTools(t *testing.T, env ...string) listing {
	t.Helper()
	a := testenv.Open(t, testenv.Config(t, env...))
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.ServeStdio(ctx, inR, outW); _ = outW.Close() }()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		if err := <-done; err != nil {
			t.Logf("stdio server: %v", err)
		}
	})
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 4<<20)
	send := func(msg string) {
		_, err := io.WriteString(inW, msg+"\n")
		require.NoError(t, err)
	}
	reply := func(id int) json.RawMessage {
		for lines.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
			}
			require.NoError(t, json.Unmarshal(lines.Bytes(), &m))
			if m.ID != nil && *m.ID == id {
				return m.Result
			}
		}
		t.Fatalf("no reply %d: %v", id, lines.Err())
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"size","version":"1"}}}`)
	var init struct {
		Instructions string `json:"instructions"`
	}
	require.NoError(t, json.Unmarshal(reply(1), &init))
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	raw := reply(2)
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(raw, &res))
	l := listing{bytes: len(raw), perTool: map[string]int{}, tools: res.Tools, instructions: init.Instructions}
	for _, tl := range res.Tools {
		var named struct {
			Name string `json:"name"`
		}
		require.NoError(t, json.Unmarshal(tl, &named))
		l.perTool[named.Name] = len(tl)
	}
	return l
}

func tokens(bytes int) int { return (bytes + 3) / 4 }

// TestToolListBudget fails when the list outgrows its budget and prints
// the sizes (go test ./app -run TestToolListBudget -v shows them always):
// the full list, read-only, each toolset alone, and a dynamic session's
// start, in bytes and in tokens at 4 characters each.
func TestToolListBudget(t *testing.T) {
	t.Parallel()
	full := listTools(t, "ACCORDS_MCP_TOOLSETS=all")
	require.Len(t, full.perTool, 45, "the full list is the predecessor's 40 tools and 5 more, without the discovery tools")
	type row struct {
		name  string
		bytes int
		tools int
	}
	rows := []row{{"full", full.bytes, len(full.perTool)}}
	def := listTools(t)
	rows = append(rows, row{"default", def.bytes, len(def.perTool)})
	ro := listTools(t, "ACCORDS_MCP_READ_ONLY=true", "ACCORDS_MCP_TOOLSETS=all")
	rows = append(rows, row{"--read-only", ro.bytes, len(ro.perTool)})
	for _, ts := range tools.SelectableToolsets {
		l := listTools(t, "ACCORDS_MCP_TOOLSETS="+ts)
		rows = append(rows, row{"--toolsets " + ts, l.bytes, len(l.perTool)})
	}
	dyn := listTools(t, "ACCORDS_MCP_DYNAMIC_TOOLSETS=true")
	rows = append(rows, row{"--dynamic-toolsets (start)", dyn.bytes, len(dyn.perTool)})

	var b strings.Builder
	fmt.Fprintf(&b, "tools/list sizes (compact JSON; tokens at 4 bytes each):\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-28s %2d tools %6d bytes %5d tokens\n", r.name, r.tools, r.bytes, tokens(r.bytes))
	}
	t.Log(b.String())

	if full.bytes > fullListBudget || testing.Verbose() {
		names := slices.Collect(maps.Keys(full.perTool))
		slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(full.perTool[b], full.perTool[a]), cmp.Compare(a, b)) })
		var per strings.Builder
		for _, n := range names {
			fmt.Fprintf(&per, "  %-42s %5d bytes\n", n, full.perTool[n])
		}
		t.Logf("per tool, largest first:\n%s", per.String())
	}
	assert.LessOrEqual(t, full.bytes, fullListBudget, "the full tools/list is over its budget of %d bytes", fullListBudget)
	assert.Less(t, dyn.bytes, dynamicStartBudget, "a dynamic session's first tools/list is over %d bytes", dynamicStartBudget)
	assert.ElementsMatch(t, tools.Core, slices.Collect(maps.Keys(dyn.perTool)), "a dynamic session starts with exactly the core")
}

// TestDescriptionsSayWhatAndWhen: one short description per tool, its first
// sentence complete within the limit.
func TestDescriptionsSayWhatAndWhen(t *testing.T) {
	t.Parallel()
	for _, d := range tools.Definitions() {
		desc := d.Description
		assert.LessOrEqual(t, len(desc), descriptionMax, "%s: description over %d characters", d.Name, descriptionMax)
		assert.True(t, strings.HasSuffix(desc, "."), "%s: description is a sentence", d.Name)
		first := strings.Index(desc, ". ")
		if first < 0 {
			first = len(desc)
		}
		assert.LessOrEqual(t, first, descriptionMax, "%s: first sentence too long", d.Name)
	}
	// The two names for one operation say how they relate.
	imp, up := tool(t, "vaultclaw_cookbook_import"), tool(t, "vaultclaw_cookbook_upsert")
	assert.Contains(t, imp.Description, "upsert")
	assert.Contains(t, up.Description, "import")
}

func tool(t *testing.T, name string) tools.Tool {
	t.Helper()
	for _, d := range tools.Definitions() {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no tool %s", name)
	return tools.Tool{}
}
