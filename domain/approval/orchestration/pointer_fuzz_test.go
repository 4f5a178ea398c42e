package orchestration

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// FuzzPointer parses arbitrary RFC 6901 pointers and sets values in
// arbitrary documents. Properties: no panic; a parsed pointer renders back
// to a string that parses to the same pointer; after a successful Set (not
// appending with "-"), Lookup finds exactly the value set; failed Sets report
// a ConflictError.
func FuzzPointer(f *testing.F) {
	for _, s := range []struct{ doc, ptr, val string }{
		{`{"a":{"b":[1,2]}}`, "/a/b/1", `"x"`},
		{`{"a":[1]}`, "/a/-", `{"k":1}`},
		{`{"a":[1]}`, "/a/1/k", `true`},
		{`{"a~b":{"c/d":1}}`, "/a~0b/c~1d", `null`},
		{`{}`, "", `[1,2]`},
		{`[1,2]`, "/01", `3`},
		{`{"a":"s"}`, "/a/b", `1`},
		{`{}`, "/a~2", `1`},
		{`null`, "/a", `1`},
		{`{"":{"":1}}`, "//", `2`},
	} {
		f.Add(s.doc, s.ptr, s.val)
	}
	f.Fuzz(func(t *testing.T, doc, ptr, val string) {
		p, err := ParsePointer(ptr)
		if err != nil {
			return
		}
		again, err := ParsePointer(p.String())
		if err != nil || !reflect.DeepEqual(p, again) {
			t.Fatalf("pointer %q renders as %q which parses to %q (%v)", ptr, p.String(), again, err)
		}
		var root, v any
		if json.Unmarshal([]byte(doc), &root) != nil || json.Unmarshal([]byte(val), &v) != nil {
			return
		}
		out, err := p.Set(root, v)
		if err != nil {
			if _, ok := err.(*ConflictError); !ok {
				t.Fatalf("Set failed with %T: %v", err, err)
			}
			return
		}
		if slices.Contains(p, "-") {
			return
		}
		got, ok := p.Lookup(out)
		if !ok {
			t.Fatalf("value set at %q not found in %v", ptr, out)
		}
		gj, _ := json.Marshal(got)
		vj, _ := json.Marshal(v)
		if string(gj) != string(vj) {
			t.Fatalf("at %q: set %s, looked up %s", ptr, vj, gj)
		}
	})
}
