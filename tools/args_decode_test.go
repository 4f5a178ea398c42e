package tools

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type kindsItem struct {
	Name string `json:"name"`
	N    int    `json:"n,omitempty"`
}

type kindsIn struct {
	S     string         `json:"s,omitempty"`
	B     bool           `json:"b,omitempty"`
	I8    int8           `json:"i8,omitempty"`
	I     int            `json:"i,omitempty"`
	F     float64        `json:"f,omitempty"`
	F32   float32        `json:"f32,omitempty"`
	Any   any            `json:"any,omitempty"`
	M     map[string]any `json:"m,omitempty"`
	Strs  []string       `json:"strs,omitempty"`
	Items []kindsItem    `json:"items,omitempty"`
	P     *int           `json:"p,omitempty"`
	PS    *kindsItem     `json:"ps,omitempty"`
	List  StringList     `json:"list,omitempty"`
	Value AnyValue       `json:"value,omitempty"`
}

func kindsTool(got *kindsIn) Tool {
	return Define(Tool{Name: "kinds", Description: "d", Toolset: "x", Capability: "y", Hints: ReadLocal}, nil,
		func(ctx context.Context, _ *Deps, c *Call, in kindsIn) (Result, error) {
			*got = in
			return OK(nil)
		})
}

func invokeRaw(tool Tool, args string) map[string]any {
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: tool.Name, Arguments: json.RawMessage(args)}}
	raw, _ := json.Marshal(tool.Invoke(context.Background(), req, nil))
	var env map[string]any
	_ = json.Unmarshal(raw, &env)
	return env
}

// TestArgumentsDecodeIntoEveryKind pins how each Go kind an argument
// struct uses is filled from the validated arguments, the loose forms
// included: a whole number written 7.0 is an integer, a CSV string is a
// list, any JSON value is kept as given.
func TestArgumentsDecodeIntoEveryKind(t *testing.T) {
	t.Parallel()
	var got kindsIn
	tool := kindsTool(&got)
	ok, _, msg := invokeSample(t, tool, `{"s":"x","b":true,"i8":-7,"i":1099511627776.0,"f":1.5,"f32":0.25,`+
		`"any":["a"],"m":{"k":1,"n":null},"strs":["a","c"],"items":[{"name":"one","n":2.0}],"p":3,"ps":{"name":"p"},`+
		`"list":" a, ,b ","value":{"k":[1]}}`)
	require.True(t, ok, msg)
	three := 3
	assert.Equal(t, kindsIn{
		S: "x", B: true, I8: -7, I: 1 << 40, F: 1.5, F32: 0.25,
		Any: []any{"a"}, M: map[string]any{"k": 1.0, "n": nil}, Strs: []string{"a", "c"},
		Items: []kindsItem{{Name: "one", N: 2}}, P: &three, PS: &kindsItem{Name: "p"},
		List: StringList{"a", "b"}, Value: AnyValue{Value: map[string]any{"k": []any{1.0}}, Given: true},
	}, got)

	for args, want := range map[string]StringList{
		`{"list":["  x ",""," y"]}`: {"x", "y"},
		`{"list":""}`:               {},
		`{"list":[]}`:               {},
		`{}`:                        nil,
		`{"list":null}`:             nil,
	} {
		got = kindsIn{}
		ok, _, msg := invokeSample(t, tool, args)
		require.True(t, ok, msg)
		assert.Equal(t, want, got.List, args)
		if want != nil {
			assert.NotNil(t, got.List, "%s: a given list is never nil", args)
		}
	}
	for args, want := range map[string]AnyValue{
		`{}`:              {},
		`{"value":null}`:  {Given: true},
		`{"value":"x"}`:   {Value: "x", Given: true},
		`{"value":false}`: {Value: false, Given: true},
	} {
		ok, _, msg := invokeSample(t, tool, args)
		require.True(t, ok, msg)
		assert.Equal(t, want, got.Value, args)
	}
}

// TestArgumentRefusalsNameTheValue pins the message and field of each
// refused value, nested paths included: the schema's refusals, and values
// the schema lets through but the Go type cannot hold.
func TestArgumentRefusalsNameTheValue(t *testing.T) {
	t.Parallel()
	var got kindsIn
	tool := kindsTool(&got)
	for _, c := range []struct{ args, field, want string }{
		{`{"s":1}`, "s", "s must be a string, got integer"},
		{`{"b":"yes"}`, "b", "b must be a boolean, got string"},
		{`{"i8":300}`, "i8", "i8 must be at most 127"},
		{`{"i":1.5}`, "i", "i must be an integer, got 1.5"},
		{`{"i":1e19}`, "i", "i must be int"},
		{`{"i":"1"}`, "i", "i must be an integer, got string"},
		{`{"f":"1"}`, "f", "f must be a number, got string"},
		{`{"m":[]}`, "m", "m must be an object, got array"},
		{`{"strs":"a"}`, "strs", "strs must be an array, got string"},
		{`{"strs":["a",2]}`, "strs[1]", "strs[1] must be a string, got integer"},
		{`{"strs":["a",null]}`, "strs[1]", "strs[1] must be a string, got null"},
		{`{"items":[{"name":1}]}`, "items[0].name", "items[0].name must be a string, got integer"},
		{`{"items":[{"n":1}]}`, "items[0].name", "items[0].name is required"},
		{`{"items":["x"]}`, "items[0]", "items[0] must be an object, got string"},
		{`{"p":"3"}`, "p", "p must be an integer, got string"},
		{`{"ps":{"name":"a","n":0.5}}`, "ps.n", "ps.n must be an integer, got 0.5"},
		{`{"list":5}`, "list", "list must be a string or array, got integer"},
		{`{"list":["a",5]}`, "list[1]", "list[1] must be a string, got integer"},
		// Several problems: the first in name order is reported.
		{`{"s":1,"b":"x","i":"y"}`, "b", "b must be a boolean, got string"},
	} {
		ok, field, msg := invokeSample(t, tool, c.args)
		require.False(t, ok, c.args)
		assert.Equal(t, c.field, field, c.args)
		assert.Equal(t, c.want, msg, c.args)
	}
}

// A loose form's own refusal (for a field whose schema would let the
// value through) still names the field.
func TestDecodeArgsNamesTheField(t *testing.T) {
	t.Parallel()
	var in struct {
		Nested struct {
			List StringList `json:"list"`
		} `json:"nested"`
	}
	err := decodeArgs([]byte(`{"nested":{"list":5}}`), &in)
	require.Error(t, err)
	ae := apperr.As(err)
	assert.Equal(t, apperr.CodeValidation, ae.Code)
	assert.Equal(t, "nested.list", ae.Details["field"])
}

// TestKeysDifferingInCaseDoNotBypassValidation: encoding/json matches
// keys without regard to case, so "Limit" would fill the limit field
// without the schema having seen it. Such keys are warned about and
// dropped, at every level with declared fields.
func TestKeysDifferingInCaseDoNotBypassValidation(t *testing.T) {
	t.Parallel()
	type opts struct {
		Depth int `json:"depth,omitempty"`
	}
	type caseIn struct {
		Limit int    `json:"limit,omitempty"`
		Mode  string `json:"mode,omitempty"`
		Opts  opts   `json:"opts,omitempty"`
	}
	var got caseIn
	tool := Define(Tool{Name: "cases", Description: "d", Toolset: "x", Capability: "y", Hints: ReadLocal}, func(s *jsonschema.Schema) {
		Range(s, "limit", 1, 100)
		Enum(s, "mode", "A", "B")
		Range(Prop(s, "opts"), "depth", 0, 3)
	}, func(ctx context.Context, _ *Deps, c *Call, in caseIn) (Result, error) {
		got = in
		return OK(nil)
	})
	env := invokeRaw(tool, `{"LIMIT":100000,"Mode":"BOGUS","opts":{"DEPTH":99}}`)
	require.Equal(t, true, env["ok"], "%v", env["error"])
	assert.Equal(t, caseIn{}, got, "no unvalidated value reaches the handler")
	assert.Equal(t, []any{
		`unknown argument "LIMIT"; did you mean "limit"?`,
		`unknown argument "Mode"; did you mean "mode"?`,
		`unknown argument "opts.DEPTH"; did you mean "opts.depth"?`,
	}, env["meta"].(map[string]any)["warnings"])
	// The same values under their own names are refused.
	ok, field, _ := invokeSample(t, tool, `{"opts":{"depth":99}}`)
	require.False(t, ok)
	assert.Equal(t, "opts.depth", field)
}

// TestEveryToolSchemaResolves: every tool's argument schema resolves,
// each default satisfying the schema it belongs to, as the go-sdk's
// AddTool requires. (Schemas are resolved on a tool's first call.)
func TestEveryToolSchemaResolves(t *testing.T) {
	t.Parallel()
	for _, d := range Definitions() {
		_, err := d.args.resolved()
		assert.NoError(t, err, d.Name)
	}
}

// A tool whose default is outside its own range never runs: its calls
// are MCP_INTERNAL naming the schema problem in the log.
func TestDefaultsAreCheckedAgainstTheirSchema(t *testing.T) {
	t.Parallel()
	tool := Define(Tool{Name: "bad_default", Description: "d", Toolset: "x", Capability: "y", Hints: ReadLocal}, func(s *jsonschema.Schema) {
		Default(s, "limit", 500)
		Range(s, "limit", 1, 100)
	}, func(ctx context.Context, _ *Deps, c *Call, in sampleIn) (Result, error) {
		t.Fatal("the handler ran")
		return OK(nil)
	})
	_, err := tool.args.resolved()
	require.ErrorContains(t, err, "tool bad_default: input schema: validating /properties/limit: maximum: 500")
	env := invokeRaw(tool, `{"name":"a"}`)
	assert.Equal(t, "MCP_INTERNAL", env["error"].(map[string]any)["code"])
}
