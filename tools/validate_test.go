package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

type sampleIn struct {
	Name   string         `json:"name"`
	Kind   string         `json:"kind,omitempty"`
	Limit  int            `json:"limit,omitempty"`
	Tags   any            `json:"tags,omitempty"`
	Flag   bool           `json:"flag,omitempty"`
	Nested *sampleNested  `json:"nested,omitempty"`
	Free   map[string]any `json:"free,omitempty"`
	Blob   any            `json:"blob,omitempty"`
}

type sampleNested struct {
	Items []string `json:"items"`
}

func sampleTool(t *testing.T, got *sampleIn) Tool {
	return Define(Tool{Name: "sample", Description: "d", Toolset: "x", Capability: "y", Hints: ReadLocal}, func(s *jsonschema.Schema) {
		Enum(s, "kind", "AUTO", "PLAN")
		Default(s, "kind", "AUTO")
		Default(s, "limit", 50)
		Range(s, "limit", 1, 100)
		AnyOf(s, "tags", str(), strs())
	}, func(ctx context.Context, _ *Deps, c *Call, in sampleIn) (Result, error) {
		*got = in
		return OK(map[string]any{"name": in.Name})
	})
}

func invokeSample(t *testing.T, tool Tool, args string) (ok bool, field, message string) {
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: json.RawMessage(args)}}
	env := tool.Invoke(context.Background(), req, nil)
	if env.OK {
		return true, "", ""
	}
	require.Equal(t, apperr.CodeValidation, env.Error.Code, env.Error.Message)
	require.Equal(t, "validation", env.Error.Category)
	f, _ := env.Error.Details["field"].(string)
	return false, f, env.Error.Message
}

func TestValidationNamesTheField(t *testing.T) {
	t.Parallel()
	var got sampleIn
	tool := sampleTool(t, &got)
	cases := []struct{ args, field, msg string }{
		{`{}`, "name", "name is required"},
		{`{"name":null}`, "name", "name is required"},
		{`{"name":5}`, "name", "name must be a string, got integer"},
		{`{"name":"a","kind":"BOGUS"}`, "kind", "kind must be one of AUTO, PLAN, got BOGUS"},
		{`{"name":"a","limit":"ten"}`, "limit", "limit must be an integer, got string"},
		{`{"name":"a","limit":1000}`, "limit", "limit must be at most 100"},
		{`{"name":"a","flag":"yes"}`, "flag", "flag must be a boolean, got string"},
		{`{"name":"a","tags":5}`, "tags", "tags must be a string or array, got integer"},
		{`{"name":"a","nested":{}}`, "nested.items", "nested.items is required"},
		{`{"name":"a","nested":{"items":["x",3]}}`, "nested.items[1]", "nested.items[1] must be a string, got integer"},
		{`{"name":"a","free":[]}`, "free", "free must be an object, got array"},
		{`[1,2]`, "arguments", "arguments must be a JSON object"},
		// A fraction where a count is meant is refused, not truncated; a
		// number beyond float64 is reported against its own field.
		{`{"name":"a","limit":2.5}`, "limit", "limit must be an integer, got 2.5"},
		{`{"name":"a","limit":1e400}`, "limit", "limit is a number out of range"},
		{`{"name":"a","nested":{"items":["x"]},"blob":{"x":[1,-1e999]}}`, "blob.x[1]", "blob.x[1] is a number out of range"},
		// Text that is not valid Unicode is refused, not replaced.
		{"{\"name\":\"a\xffb\"}", "name", "name is not valid UTF-8 text (invalid bytes or an unpaired surrogate escape)"},
		{`{"name":"a","nested":{"items":["ok","\udc00"]}}`, "nested.items[1]", "nested.items[1] is not valid UTF-8 text (invalid bytes or an unpaired surrogate escape)"},
		{`{"name":"\ud83d"}`, "name", "name is not valid UTF-8 text (invalid bytes or an unpaired surrogate escape)"},
	}
	for _, c := range cases {
		ok, field, msg := invokeSample(t, tool, c.args)
		require.False(t, ok, c.args)
		require.Equal(t, c.field, field, c.args)
		require.Equal(t, c.msg, msg, c.args)
	}
}

func TestDefaultsAndUnknownArguments(t *testing.T) {
	t.Parallel()
	var got sampleIn
	tool := sampleTool(t, &got)
	ok, _, msg := invokeSample(t, tool, `{"name":"a \ud83d\ude00 é","limit":7.0,"unknown":true,"tags":"a,b","blob":{"x":[1]}}`)
	require.True(t, ok, msg)
	require.Equal(t, "a 😀 é", got.Name, "paired surrogate escapes and UTF-8 are text")
	require.Equal(t, "AUTO", got.Kind, "defaults are applied")
	require.Equal(t, 7, got.Limit, "a whole number written 7.0 is an integer")
	require.Equal(t, "a,b", got.Tags)
	require.Equal(t, map[string]any{"x": []any{1.0}}, got.Blob)

	ok, _, msg = invokeSample(t, tool, `{"name":"a","tags":["a","b"]}`)
	require.True(t, ok, msg)
	require.Equal(t, 50, got.Limit)
	require.Equal(t, []any{"a", "b"}, got.Tags)
}

func TestInferredSchemasHaveNoBooleanSchemas(t *testing.T) {
	t.Parallel()
	var got sampleIn
	raw, err := json.Marshal(sampleTool(t, &got).InputSchema)
	require.NoError(t, err)
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch x := v.(type) {
		case bool:
			t.Fatalf("boolean schema at %s", path)
		case map[string]any:
			if props, ok := x["properties"].(map[string]any); ok {
				for k, p := range props {
					walk(p, path+"/"+k)
				}
			}
			if items, ok := x["items"]; ok {
				walk(items, path+"/items")
			}
		}
	}
	var decoded any
	require.NoError(t, json.Unmarshal(raw, &decoded))
	walk(decoded, "")
	require.NotContains(t, string(raw), `"additionalProperties":false`)
}

func TestPanicBecomesInternalEnvelope(t *testing.T) {
	t.Parallel()
	tool := Define(Tool{Name: "boom", Description: "d", Toolset: "x", Capability: "y", Hints: ReadLocal}, nil,
		func(ctx context.Context, _ *Deps, c *Call, _ Empty) (Result, error) { panic("secret-ish detail") })
	env := tool.Invoke(context.Background(), &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "boom"}}, nil)
	require.False(t, env.OK)
	require.Equal(t, apperr.CodeInternal, env.Error.Code)
	raw, _ := json.Marshal(env)
	require.NotContains(t, string(raw), "secret-ish detail", "panic values are logged, not returned")
}

func TestRenderApprovalText(t *testing.T) {
	t.Parallel()
	h, ok := approval.DetectJob(approval.Reply{Status: 202, Body: map[string]any{"job": map[string]any{
		"job_id": "job_1", "status": "PENDING", "error": map[string]any{"code": "CONNECTOR_APPROVAL_DECISION_REQUIRED"},
		"pending_approval": map[string]any{"challenge": map[string]any{"challenge_id": "ch_1"}},
	}}})
	require.True(t, ok)
	// The attestation link only inside pending_approval is found too.
	h.PendingApproval["remote_attestation_url"] = "https://att.example/x"
	res := Fail(context.Background(), h.Err())
	require.True(t, res.IsError)
	// One text item (D22): the kind, the ids, the link once, the wait call.
	require.Len(t, res.Content, 1)
	require.Equal(t, "MCP_APPROVAL_REQUIRED: a person must approve this JOB in Vaultclaw before it runs.\n"+
		"job_id job_1, challenge_id ch_1\n"+
		"Show the user this link to approve: https://att.example/x\n"+
		`Then call vaultclaw_approval_wait with {"handle":{"challenge_id":"ch_1","job_id":"job_1","kind":"JOB","pending_id":"","run_id":""}}; do not retry the call.`,
		res.Content[0].(*mcp.TextContent).Text)
	// A plain error with the approval code but no handoff is a plain error.
	plain := Render(envelope.Failure(apperr.New(apperr.CodeApprovalRequired, "approval required")))
	require.Len(t, plain.Content, 1)
	require.True(t, strings.HasPrefix(plain.Content[0].(*mcp.TextContent).Text, "MCP_APPROVAL_REQUIRED: approval required"))
}

// Arguments keep the predecessor's reading of an explicit null: zero for a
// top-level argument (no default), absent inside a nested object; an any
// value (plan_input) keeps a given null.
func TestNullsAndGivenKeys(t *testing.T) {
	t.Parallel()
	type nested struct {
		Flag bool `json:"flag,omitempty"`
	}
	type in struct {
		Limit  int      `json:"limit,omitempty"`
		Nested nested   `json:"nested,omitempty"`
		Any    AnyValue `json:"any,omitempty"`
		Maybe  *bool    `json:"maybe,omitempty"`
		Names  []string `json:"names,omitempty"`
	}
	var got in
	tool := Define(Tool{Name: "nulls", Description: "d", Toolset: "x", Capability: "y", Hints: ReadLocal}, func(s *jsonschema.Schema) {
		Default(s, "limit", 50)
		Default(Prop(s, "nested"), "flag", true)
	}, func(ctx context.Context, _ *Deps, c *Call, v in) (Result, error) {
		got = v
		return OK(nil)
	})
	ok, _, msg := invokeSample(t, tool, `{"limit":null,"nested":{"flag":null},"any":null,"unknown":1}`)
	require.True(t, ok, msg)
	require.Equal(t, 0, got.Limit)
	require.True(t, got.Nested.Flag)
	require.True(t, got.Any.Given, "an explicit null for an any argument is kept as given")
	require.Nil(t, got.Any.Value)
	require.Nil(t, got.Maybe)
	require.Nil(t, got.Names)

	ok, _, msg = invokeSample(t, tool, `{"names":[]}`)
	require.True(t, ok, msg)
	require.Equal(t, 50, got.Limit)
	require.True(t, got.Nested.Flag, "an absent object gets its nested defaults")
	require.False(t, got.Any.Given)
	require.NotNil(t, got.Names)
	require.Empty(t, got.Names)
}

// TestArgumentsWithTooManyValuesAreRefusedBeforeDecoding: a 400 KB
// argument of tiny values would cost tens of megabytes decoded.
func TestArgumentsWithTooManyValuesAreRefusedBeforeDecoding(t *testing.T) {
	t.Parallel()
	var got sampleIn
	tool := sampleTool(t, &got)
	raw := `{"name":"a","blob":[` + strings.Repeat("0,", MaxArgumentValues) + `0]}`
	ok, field, msg := invokeSample(t, tool, raw)
	require.False(t, ok)
	require.Equal(t, "arguments", field)
	require.Contains(t, msg, "more than 200000 JSON values")
	ok, _, msg = invokeSample(t, tool, `{"name":"a","blob":[`+strings.Repeat("0,", 1000)+`0]}`)
	require.True(t, ok, msg)
}
