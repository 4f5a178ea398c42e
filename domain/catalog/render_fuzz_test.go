package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// FuzzTemplateRender renders a verb template whose base request, binding
// path, input key, default and inputs are all fuzzed. Properties: no panic;
// failures carry a template or catalog code, never MCP_INTERNAL; the same
// input renders identically twice; a success is a JSON object that passed
// the VERB_REQUEST shape check and reports every binding exactly once (as
// set, defaulted or skipped); the stored template is never modified.
func FuzzTemplateRender(f *testing.F) {
	f.Add(`{"connector_id":"c","verb":"v","request":{}}`, "/request/url", "url", `"GET"`, `{"url":"https://x"}`, "")
	f.Add(`{"connector_id":"c","verb":"v","request":{"h":[{"k":1}]}}`, "/request/h/1/key", "k", ``, `{"k":null}`, "AUTO")
	f.Add(`{"connector_id":"c","verb":"v","request":{}}`, "/request/a~2", "a", ``, `{"a":1}`, "verb_request")
	f.Add(`{"connector_id":"c","verb":"v","request":{}}`, "/request/arr/9999", "a", ``, `{"a":[1,2]}`, "")
	f.Add(`{"connector_id":"c","verb":"v","request":{}}`, "/", "a", `{}`, `{}`, "PLAN")
	f.Add(`{"connector_id":"c","verb":"v","request":"str"}`, "/request/0", "a", `0`, `{}`, "")
	f.Add(`{}`, "/verb", "v", `false`, `{"v":"x"}`, "")
	f.Fuzz(func(t *testing.T, base, path, key, def, inputs, kind string) {
		var baseObj map[string]any
		if json.Unmarshal([]byte(base), &baseObj) != nil || baseObj == nil {
			return
		}
		var in map[string]any
		if json.Unmarshal([]byte(inputs), &in) != nil {
			return
		}
		bd := Binding{TargetPath: path, InputKey: key}
		if def != "" {
			var d any
			if json.Unmarshal([]byte(def), &d) != nil {
				return
			}
			bd.Default = d
		}
		entry := Entry{EntryID: "t", EntryType: TypeTemplateVerb, BaseRequest: baseObj, Bindings: []Binding{bd}}
		bundle := &Bundle{Type: BundleType, CookbookID: "fuzz", Version: "1.0.0", Title: "Fuzz", Entries: []Entry{entry}}
		before, _ := json.Marshal(baseObj)

		r1, err1 := RenderEntry(bundle, &bundle.Entries[0], in, kind)
		r2, err2 := RenderEntry(bundle, &bundle.Entries[0], in, kind)
		after, _ := json.Marshal(bundle.Entries[0].BaseRequest)
		if string(before) != string(after) {
			t.Fatalf("rendering modified the stored template:\n%s\n%s", before, after)
		}
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("nondeterministic: %v / %v", err1, err2)
		}
		if err1 != nil {
			ae := apperr.As(err1)
			switch ae.Code {
			case apperr.CodeTemplateInputInvalid, apperr.CodeTemplateRenderUnresolved, apperr.CodeTemplateNotFound, apperr.CodeValidation:
			default:
				t.Fatalf("render failed with %s: %v", ae.Code, err1)
			}
			if ae.Message != apperr.As(err2).Message {
				t.Fatalf("nondeterministic error: %v / %v", err1, err2)
			}
			return
		}
		j1, err := json.Marshal(r1)
		if err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
		j2, _ := json.Marshal(r2)
		if string(j1) != string(j2) {
			t.Fatalf("nondeterministic render:\n%s\n%s", j1, j2)
		}
		c, _ := r1.Rendered["connector_id"].(string)
		if strings.TrimSpace(c) == "" {
			t.Fatalf("VERB_REQUEST without connector_id passed the shape check: %s", j1)
		}
		if _, ok := r1.Rendered["request"].(map[string]any); !ok {
			t.Fatalf("VERB_REQUEST without request object passed the shape check: %s", j1)
		}
		if n := len(r1.UsedDefaults) + len(r1.SkippedOptional); n > 1 {
			t.Fatalf("one binding reported %d times", n)
		}
	})
}

// FuzzBindingPath sets a value at an arbitrary binding path in an
// arbitrary document. Properties: no panic, no unbounded growth (indexes are
// capped), and when every segment is an object key the value can be read
// back at the path.
func FuzzBindingPath(f *testing.F) {
	for _, s := range []struct{ doc, path string }{
		{`{"request":{"arr":["a0"]}}`, "/request/arr/3"},
		{`{"steps":[{"request_base":{"to":["x"]}}]}`, "/steps/0/request_base/to/0"},
		{`{}`, "/request/new/0/k"},
		{`{"a":1}`, "/a/b"},
		{`{"0":1}`, "/0"},
		{`{}`, "/"},
		{`{}`, "/a~1b/c~0d"},
		{`{}`, "/a~"},
		{`{}`, "/arr/-"},
		{`null`, "/x/01"},
		{`{}`, "/x/99999999999999999999"},
	} {
		f.Add(s.doc, s.path)
	}
	f.Fuzz(func(t *testing.T, doc, path string) {
		var root any
		if json.Unmarshal([]byte(doc), &root) != nil {
			return
		}
		out, err := SetPointer(root, path, "VALUE")
		if err != nil {
			return
		}
		raw, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("result does not marshal: %v", err)
		}
		if len(raw) > len(doc)+16*(MaxArrayIndex+2)*strings.Count(path, "/")+len(path)+64 {
			t.Fatalf("result grew to %d bytes from %q at %q", len(raw), doc, path)
		}
		segs, perr := parsePointer(path)
		if perr != nil {
			t.Fatalf("SetPointer accepted %q that parsePointer rejects: %v", path, perr)
		}
		cur := out
		for _, s := range segs {
			if isDigits(s) {
				return // array semantics are covered by the render tests
			}
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("segment %q of %q is not an object after set: %s", s, path, raw)
			}
			cur = m[s]
		}
		if cur != "VALUE" {
			t.Fatalf("value not found at %q after set: %s", path, raw)
		}
	})
}
