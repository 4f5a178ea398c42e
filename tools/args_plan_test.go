package tools

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type planItem struct {
	Name string `json:"name"`
	N    int    `json:"n,omitempty"`
}

type planArgs struct {
	S     string         `json:"s,omitempty"`
	B     bool           `json:"b,omitempty"`
	I8    int8           `json:"i8,omitempty"`
	I     int            `json:"i,omitempty"`
	F     float64        `json:"f,omitempty"`
	F32   float32        `json:"f32,omitempty"`
	Any   any            `json:"any,omitempty"`
	M     map[string]any `json:"m,omitempty"`
	Strs  []string       `json:"strs,omitempty"`
	Items []planItem     `json:"items,omitempty"`
	P     *int           `json:"p,omitempty"`
	PS    *planItem      `json:"ps,omitempty"`
	List  StringList     `json:"list,omitempty"`
}

// TestPlanValueBindsEveryKind pins how each supported Go kind is set from
// validated JSON.
func TestPlanValueBindsEveryKind(t *testing.T) {
	d := newDecoder[planArgs]("t", nil)
	var got planArgs
	require.NoError(t, d.decode(map[string]any{
		"s": "x", "b": true, "i8": float64(-7), "i": float64(1 << 40), "f": 1.5, "f32": 0.25,
		"any": []any{"a"}, "m": map[string]any{"k": 1.0}, "strs": []any{"a", nil, "c"},
		"items": []any{map[string]any{"name": "one", "n": 2.0}, nil}, "p": 3.0, "ps": map[string]any{"name": "p"},
		"list": "a, b",
	}, &got))
	three := 3
	assert.Equal(t, planArgs{
		S: "x", B: true, I8: -7, I: 1 << 40, F: 1.5, F32: 0.25,
		Any: []any{"a"}, M: map[string]any{"k": 1.0}, Strs: []string{"a", "", "c"},
		Items: []planItem{{Name: "one", N: 2}, {}}, P: &three, PS: &planItem{Name: "p"},
		List: StringList{"a", "b"},
	}, got)
}

// TestPlanValueMismatches pins the message and field of each value the Go
// type cannot hold, nested paths included.
func TestPlanValueMismatches(t *testing.T) {
	d := newDecoder[planArgs]("t", nil)
	for _, c := range []struct {
		args        map[string]any
		field, want string
	}{
		{map[string]any{"s": 1.0}, "s", "s must be string"},
		{map[string]any{"b": "yes"}, "b", "b must be bool"},
		{map[string]any{"i8": 300.0}, "i8", "i8 must be int8"},
		{map[string]any{"i": 1.5}, "i", "i must be int"},
		{map[string]any{"i": 1e19}, "i", "i must be int"},
		{map[string]any{"i": "1"}, "i", "i must be int"},
		{map[string]any{"f": "1"}, "f", "f must be float64"},
		{map[string]any{"f32": true}, "f32", "f32 must be float32"},
		{map[string]any{"m": []any{}}, "m", "m must be object"},
		{map[string]any{"strs": "a"}, "strs", "strs must be array"},
		{map[string]any{"strs": []any{"a", 2.0}}, "strs[1]", "strs[1] must be string"},
		{map[string]any{"items": []any{map[string]any{"name": 1.0}}}, "items[0].name", "items[0].name must be string"},
		{map[string]any{"items": []any{"x"}}, "items[0]", "items[0] must be an object"},
		{map[string]any{"p": "3"}, "p", "p must be int"},
		{map[string]any{"ps": map[string]any{"n": 0.5}}, "ps.n", "ps.n must be int"},
		{map[string]any{"list": 5.0}, "list", "value must be csv string or string array"},
	} {
		var got planArgs
		err := d.decode(c.args, &got)
		require.Error(t, err, c.args)
		ae := apperr.As(err)
		assert.Equal(t, apperr.CodeValidation, ae.Code, c.args)
		assert.Equal(t, c.want, ae.Message, c.args)
		assert.Equal(t, c.field, ae.Details["field"], c.args)
	}
}

// TestPlanValueRefusesUnsupportedTypes pins the errors a tool definition
// with an argument type the decoder cannot fill gets at start-up.
func TestPlanValueRefusesUnsupportedTypes(t *testing.T) {
	for _, c := range []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[chan int](), "unsupported argument type chan int"},
		{reflect.TypeFor[fmt.Stringer](), "unsupported interface type fmt.Stringer"},
		{reflect.TypeFor[map[int]any](), "unsupported map type map[int]interface {} (use map[string]any)"},
		{reflect.TypeFor[map[string]string](), "unsupported map type map[string]string (use map[string]any)"},
		{reflect.TypeFor[map[string]fmt.Stringer](), "unsupported map type map[string]fmt.Stringer (use map[string]any)"},
		{reflect.TypeFor[[]chan int](), "unsupported argument type chan int"},
		{reflect.TypeFor[*[]func()](), "unsupported argument type func()"},
		{reflect.TypeFor[[]struct {
			C chan int `json:"c"`
		}](), "argument c: unsupported argument type chan int"},
	} {
		_, err := planValue(c.t, nil)
		require.Error(t, err, c.t)
		assert.Equal(t, c.want, err.Error(), c.t)
	}
}
