package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Every result Call decodes is also validated against the output schema
// the server lists for the tool, with jsonschema-go: what go-sdk does to a
// typed tool's result on the server side, and what a client that validates
// structuredContent does. So every test that calls a tool through this
// package checks its result shape too, success or failure, and a schema
// go-sdk's resolver refuses fails the first call of its tool.

// outputSchemas caches the resolved output schemas of a session's tools.
type outputSchemas struct {
	mu    sync.Mutex
	tools map[string]*jsonschema.Resolved // nil value: listed without a schema
}

var sessionSchemas sync.Map // *mcp.ClientSession -> *outputSchemas

// ValidateOutput checks res's structured content against name's output
// schema as cs lists it. A tool cs does not list (refused, or hidden from
// this caller) has nothing to check against.
func ValidateOutput(ctx context.Context, cs Caller, name string, res *mcp.CallToolResult) error {
	var session *mcp.ClientSession
	switch c := cs.(type) {
	case *mcp.ClientSession:
		session = c
	case *Session:
		session = c.ClientSession
	default:
		return nil
	}
	rs, listed, err := schemaOf(ctx, session, name)
	if err != nil || !listed || rs == nil {
		return err
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	var instance any
	if err := json.Unmarshal(raw, &instance); err != nil {
		return err
	}
	if err := rs.Validate(instance); err != nil {
		return fmt.Errorf("result of %s does not match its output schema: %w\n%s", name, err, raw)
	}
	return nil
}

// schemaOf returns the resolved schema of name, listing the session's tools
// again when name is not known yet (the list may have grown).
func schemaOf(ctx context.Context, cs *mcp.ClientSession, name string) (*jsonschema.Resolved, bool, error) {
	v, _ := sessionSchemas.LoadOrStore(cs, &outputSchemas{})
	o := v.(*outputSchemas)
	o.mu.Lock()
	defer o.mu.Unlock()
	if rs, ok := o.tools[name]; ok {
		return rs, true, nil
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("list tools to validate %s: %w", name, err)
	}
	o.tools = map[string]*jsonschema.Resolved{}
	for _, tl := range res.Tools {
		if tl.OutputSchema == nil {
			o.tools[tl.Name] = nil
			continue
		}
		raw, err := json.Marshal(tl.OutputSchema)
		if err != nil {
			return nil, false, err
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false, fmt.Errorf("output schema of %s: %w", tl.Name, err)
		}
		rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
		if err != nil {
			return nil, false, fmt.Errorf("go-sdk's resolver refuses the output schema of %s: %w", tl.Name, err)
		}
		o.tools[tl.Name] = rs
	}
	rs, ok := o.tools[name]
	return rs, ok, nil
}
