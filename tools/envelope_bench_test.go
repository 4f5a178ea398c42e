package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type benchIn struct {
	Query string `json:"query"`
	Limit int    `json:"limit,omitempty"`
}

// BenchmarkEnvelopePath is the per-call cost every tool pays between the
// SDK and the handler: argument decoding and schema validation, the
// handler's result becoming an envelope, and the envelope rendered as
// structuredContent plus JSON text. The handler itself does nothing, so
// this is pure overhead; "failure" takes the apperr → envelope path and
// "invalid" the validation refusal. (The gateway's own overhead is
// gateway.BenchmarkGatewayOverheadMedian.)
func BenchmarkEnvelopePath(b *testing.B) {
	hits := make([]map[string]any, 10)
	for i := range hits {
		hits[i] = map[string]any{"cookbook_id": "google.workspace", "version": "1.3.0", "entry_id": "gmail_recipe_messages_list_inbox_v1",
			"entry_type": "recipe.verb.v1", "title": "List inbox messages", "connector_id": "google", "verb": "google.gmail.messages.list", "score": 1.5}
	}
	tool := Define(Tool{Name: "bench_tool", Toolset: ToolsetCatalog, Capability: CapCatalogView, Hints: ReadLocal},
		nil, func(ctx context.Context, _ *Deps, c *Call, in benchIn) (Result, error) {
			if in.Query == "fail" {
				return Result{}, apperr.New(apperr.CodeCatalogNotFound, "cookbook not found").With("cookbook_id", "x")
			}
			return OK(map[string]any{"items": hits})
		})
	cases := map[string]string{
		"success": `{"query":"inbox messages","limit":10}`,
		"failure": `{"query":"fail"}`,
		"invalid": `{"query":7,"bogus":true}`,
	}
	for _, name := range []string{"success", "failure", "invalid"} {
		b.Run(name, func(b *testing.B) {
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: json.RawMessage(cases[name])}}
			ctx := context.Background()
			env := tool.Invoke(ctx, req, nil)
			if (name == "success") != env.OK {
				b.Fatalf("%s: unexpected envelope %+v", name, env)
			}
			b.ReportAllocs()
			for b.Loop() {
				res := Render(tool.Invoke(ctx, req, nil))
				if res.StructuredContent == nil {
					b.Fatal("no structured content")
				}
			}
		})
	}
}

type benchArgsIn struct {
	CookbookID string         `json:"cookbook_id"`
	Tags       StringList     `json:"tags,omitempty"`
	Limit      int            `json:"limit,omitempty"`
	Inputs     map[string]any `json:"inputs"`
	Options    struct {
		Fallback bool `json:"fallback,omitempty"`
		Depth    int  `json:"depth,omitempty"`
	} `json:"options,omitempty"`
}

// BenchmarkArgumentHandling is the cost of one call's arguments alone:
// bounds, unknown-argument warnings, validation, defaults (top-level and
// nested) and decoding into the tool's argument struct; the handler and
// the envelope do nothing.
func BenchmarkArgumentHandling(b *testing.B) {
	tool := Define(Tool{Name: "bench_args", Toolset: ToolsetCatalog, Capability: CapCatalogView, Hints: ReadLocal},
		func(s *jsonschema.Schema) {
			AnyOf(s, "tags", str(), strs())
			Default(s, "limit", 20)
			Range(s, "limit", 1, 100)
			Default(Prop(s, "options"), "fallback", true)
			Default(Prop(s, "options"), "depth", 3)
		}, func(ctx context.Context, _ *Deps, c *Call, in benchArgsIn) (Result, error) {
			if in.Limit != 20 || !in.Options.Fallback || len(in.Tags) != 2 {
				return Result{}, apperr.Validation("x", "bad decode")
			}
			return OK(nil)
		})
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: json.RawMessage(
		`{"cookbook_id":"google.workspace","tags":"gmail, inbox","options":{},` +
			`"inputs":{"to":"a@example.com","subject":"Quarterly report","body":"Hello,\nplease find the report attached.","cc":["b@example.com","c@example.com"],"priority":2}}`)}}
	ctx := context.Background()
	if env := tool.Invoke(ctx, req, nil); !env.OK {
		b.Fatalf("unexpected envelope %+v", env.Error)
	}
	b.ReportAllocs()
	for b.Loop() {
		tool.Invoke(ctx, req, nil)
	}
}
