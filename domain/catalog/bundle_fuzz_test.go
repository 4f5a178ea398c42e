package catalog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// FuzzBundleValidation feeds arbitrary JSON to the bundle decoder and
// validator. Properties: no panic; every refusal is MCP_CATALOG_SCHEMA_INVALID
// (never MCP_INTERNAL); an accepted bundle's canonical form is a fixed point
// (decoding and preparing it again gives the same bytes and hash), and its
// cookbook id and version are safe identifiers.
func FuzzBundleValidation(f *testing.F) {
	f.Add([]byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"a","version":"1.0.0","title":"T","entries":[{"entry_id":"e","entry_type":"recipe.verb.v1","connector_id":"c","verb":"v","request":{}}]}`))
	f.Add([]byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"a","version":"1.0.0","title":"T","x_extra":{"k":[1,2]},"entries":[{"entry_id":"t","entry_type":"template.verb.v1","base_request":{"connector_id":"c","verb":"v","request":{}},"bindings":[{"target_path":"/request/a","input_key":"a","default":null},{"target_path":"/request/b/0","input_key":"b","required":false}],"query_ast_v1":{"op":"eq"}}]}`))
	f.Add([]byte(`{"type":" accords.cookbook.bundle.v1 ","cookbook_id":"..","version":"v1","title":"T","entries":[]}`))
	f.Add([]byte(`{"entries":{}}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[1]`))
	f.Add([]byte(`{"type":"accords.cookbook.bundle.v1","cookbook_id":"a","version":"1.0.0-rc.1+b","title":"T","tags":[" b","a","a",""],"entries":[{"entry_id":"p","entry_type":"template.plan.v1","base_plan":{"steps":[]},"bindings":[{"target_path":"/steps/0/x","input_key":"k","required":"yes"}]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := DecodeBundle(raw)
		if err != nil {
			requireSchemaInvalid(t, err)
			return
		}
		canonical, hash, err := Prepare(b)
		if err != nil {
			requireSchemaInvalid(t, err)
			return
		}
		if !ValidID(b.CookbookID) {
			t.Fatalf("accepted unsafe cookbook_id %q", b.CookbookID)
		}
		if _, ok := ParseVersion(b.Version); !ok {
			t.Fatalf("accepted version %q that is not semver", b.Version)
		}
		again, err := DecodeBundle(canonical)
		if err != nil {
			t.Fatalf("canonical form does not decode: %v\n%s", err, canonical)
		}
		canonical2, hash2, err := Prepare(again)
		if err != nil {
			t.Fatalf("canonical form does not validate: %v\n%s", err, canonical)
		}
		if !bytes.Equal(canonical, canonical2) || hash != hash2 {
			t.Fatalf("canonicalization is not idempotent:\n%s\n%s", canonical, canonical2)
		}
		if !json.Valid(canonical) {
			t.Fatalf("canonical form is not JSON: %s", canonical)
		}
	})
}

func requireSchemaInvalid(t *testing.T, err error) {
	t.Helper()
	ae := apperr.As(err)
	if ae.Code != apperr.CodeCatalogSchemaInvalid && ae.Code != apperr.CodeValidation {
		t.Fatalf("refusal has code %s (%v), want %s", ae.Code, err, apperr.CodeCatalogSchemaInvalid)
	}
	if strings.TrimSpace(ae.Message) == "" {
		t.Fatalf("refusal without a message: %#v", ae)
	}
}
