// Package catalog is the cookbook catalog: the accords.cookbook.bundle.v1
// model, canonical form and hashing, validation, storage with its derived
// bleve index, and rendering. It knows nothing of MCP or Vaultclaw.
package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/jsonscan"
)

// BundleType is the only bundle format this package reads and writes.
const BundleType = "accords.cookbook.bundle.v1"

// Entry types.
const (
	TypeRecipeVerb   = "recipe.verb.v1"
	TypeRecipePlan   = "recipe.plan.v1"
	TypeTemplateVerb = "template.verb.v1"
	TypeTemplatePlan = "template.plan.v1"
)

// EntryTypes lists the supported entry types in documentation order.
var EntryTypes = []string{TypeRecipeVerb, TypeRecipePlan, TypeTemplateVerb, TypeTemplatePlan}

// IsTemplate reports whether entries of type t can be rendered.
func IsTemplate(t string) bool { return t == TypeTemplateVerb || t == TypeTemplatePlan }

// Bundle is one cookbook version. Extra holds unknown top-level keys, kept
// through storage, export and hashing.
type Bundle struct {
	Type        string
	CookbookID  string
	Version     string
	Title       string
	Description string
	Tags        []string
	Entries     []Entry
	Extra       map[string]any
}

// Entry is a recipe or a template inside a bundle.
type Entry struct {
	EntryID           string
	EntryType         string
	Title             string
	Description       string
	Tags              []string
	ConnectorID       string
	Verb              string
	PolicyVersion     string
	Request           map[string]any
	Plan              map[string]any
	PlanInputDefaults map[string]any
	BaseRequest       map[string]any
	BasePlan          map[string]any
	InputSchema       map[string]any
	Bindings          []Binding
	Extra             map[string]any
}

// Binding maps one template input onto a JSON-pointer-like target path.
type Binding struct {
	TargetPath string
	InputKey   string
	// Required is nil when the author omitted it, which means true.
	Required *bool
	// Default is nil when absent or JSON null (both mean "no default").
	Default any
	Extra   map[string]any
}

// IsRequired applies the "true when omitted" rule.
func (b Binding) IsRequired() bool { return b.Required == nil || *b.Required }

// HasDefault reports whether the binding carries a default value.
func (b Binding) HasDefault() bool { return b.Default != nil }

// Entry returns the entry with the given id, or nil.
func (b *Bundle) Entry(id string) *Entry {
	for i := range b.Entries {
		if b.Entries[i].EntryID == id {
			return &b.Entries[i]
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Decoding

var (
	bundleKeys  = []string{"type", "cookbook_id", "version", "title", "description", "tags", "entries"}
	entryKeys   = []string{"entry_id", "entry_type", "title", "description", "tags", "connector_id", "verb", "policy_version", "request", "plan", "plan_input_defaults", "base_request", "base_plan", "input_schema", "bindings"}
	bindingKeys = []string{"target_path", "input_key", "required", "default"}
)

// decodeErr is a shape mismatch (rule D3); path names the offending key.
type decodeErr struct {
	path string
	err  error
}

func (e *decodeErr) Error() string { return e.path + ": " + e.err.Error() }

type fieldDecoder struct {
	m    map[string]json.RawMessage
	path string
	err  error
}

// get decodes key into dst. Keys match exactly, so "Title" stays an
// unknown key instead of becoming the title.
func (d *fieldDecoder) get(key string, dst any) {
	if d.err != nil {
		return
	}
	raw, ok := d.m[key]
	if !ok {
		return
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		d.err = &decodeErr{path: d.path + key, err: err}
	}
}

func (d *fieldDecoder) extra(known []string) map[string]any {
	if d.err != nil {
		return nil
	}
	var out map[string]any
	for k, raw := range d.m {
		if slices.Contains(known, k) {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			d.err = &decodeErr{path: d.path + k, err: err}
			return nil
		}
		if out == nil {
			out = map[string]any{}
		}
		out[k] = v
	}
	return out
}

func objectOf(raw json.RawMessage, path string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, &decodeErr{path: strings.TrimSuffix(path, "."), err: err}
	}
	if m == nil {
		return nil, &decodeErr{path: strings.TrimSuffix(path, "."), err: fmt.Errorf("must be an object, got null")}
	}
	return m, nil
}

// DecodeBundle parses raw JSON into a bundle (not canonicalized or
// validated); errors are MCP_CATALOG_SCHEMA_INVALID.
func DecodeBundle(raw []byte) (*Bundle, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, schemaErr("bundle is required")
	}
	if !json.Valid(trimmed) {
		return nil, schemaErr("bundle must be valid json object").With("cause", "invalid JSON")
	}
	if trimmed[0] != '{' {
		return nil, schemaErr("bundle must be valid json object").With("cause", "bundle is not a JSON object")
	}
	if bad := jsonscan.Scan(trimmed).BadText; bad >= 0 {
		f := jsonscan.PathAt(trimmed, bad)
		return nil, schemaErr("bundle text must be valid UTF-8 (invalid bytes or an unpaired surrogate escape at "+f+")").With("field", "bundle."+f)
	}
	b, err := decodeBundle(trimmed)
	if ae, ok := err.(*apperr.Error); ok {
		return nil, ae
	}
	if err != nil {
		return nil, schemaErr("bundle schema decode failed").With("cause", err.Error())
	}
	return b, nil
}

// BundleFromValue decodes an already parsed JSON value (a tool argument).
func BundleFromValue(v any) (*Bundle, error) {
	if v == nil {
		return nil, schemaErr("bundle is required")
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, schemaErr("bundle must be valid json object").With("cause", err.Error())
	}
	return DecodeBundle(raw)
}

func decodeBundle(raw []byte) (*Bundle, error) {
	m, err := objectOf(raw, "bundle")
	if err != nil {
		return nil, err
	}
	d := &fieldDecoder{m: m}
	b := &Bundle{}
	d.get("type", &b.Type)
	d.get("cookbook_id", &b.CookbookID)
	d.get("version", &b.Version)
	d.get("title", &b.Title)
	d.get("description", &b.Description)
	d.get("tags", &b.Tags)
	var entries []json.RawMessage
	d.get("entries", &entries)
	b.Extra = d.extra(bundleKeys)
	if d.err != nil {
		return nil, d.err
	}
	if len(entries) > MaxEntries {
		// Refused before decoding them: a hundred thousand entries cost
		// far more decoded than as text.
		return nil, tooMany("bundle.entries", len(entries), MaxEntries)
	}
	for i, er := range entries {
		e, err := decodeEntry(er, fmt.Sprintf("entries[%d].", i))
		if err != nil {
			return nil, err
		}
		b.Entries = append(b.Entries, e)
	}
	return b, nil
}

// decodeBundleEntry decodes a stored bundle's id, version and only its
// first entry entryID (nil when none).
func decodeBundleEntry(raw []byte, entryID string) (cookbookID, version string, e *Entry, err error) {
	m, err := objectOf(raw, "bundle")
	if err != nil {
		return "", "", nil, err
	}
	d := &fieldDecoder{m: m}
	d.get("cookbook_id", &cookbookID)
	d.get("version", &version)
	var entries []json.RawMessage
	d.get("entries", &entries)
	if d.err != nil {
		return "", "", nil, d.err
	}
	if len(entries) > MaxEntries {
		return "", "", nil, tooMany("bundle.entries", len(entries), MaxEntries)
	}
	for i, er := range entries {
		var id struct {
			EntryID string `json:"entry_id"`
		}
		if json.Unmarshal(er, &id) != nil || id.EntryID != entryID {
			continue
		}
		got, err := decodeEntry(er, fmt.Sprintf("entries[%d].", i))
		if err != nil {
			return "", "", nil, err
		}
		return cookbookID, version, &got, nil
	}
	return cookbookID, version, nil, nil
}

func decodeEntry(raw json.RawMessage, path string) (Entry, error) {
	m, err := objectOf(raw, path)
	if err != nil {
		return Entry{}, err
	}
	d := &fieldDecoder{m: m, path: path}
	var e Entry
	d.get("entry_id", &e.EntryID)
	d.get("entry_type", &e.EntryType)
	d.get("title", &e.Title)
	d.get("description", &e.Description)
	d.get("tags", &e.Tags)
	d.get("connector_id", &e.ConnectorID)
	d.get("verb", &e.Verb)
	d.get("policy_version", &e.PolicyVersion)
	d.get("request", &e.Request)
	d.get("plan", &e.Plan)
	d.get("plan_input_defaults", &e.PlanInputDefaults)
	d.get("base_request", &e.BaseRequest)
	d.get("base_plan", &e.BasePlan)
	d.get("input_schema", &e.InputSchema)
	var bindings []json.RawMessage
	d.get("bindings", &bindings)
	e.Extra = d.extra(entryKeys)
	if d.err != nil {
		return Entry{}, d.err
	}
	for i, br := range bindings {
		b, err := decodeBinding(br, fmt.Sprintf("%sbindings[%d].", path, i))
		if err != nil {
			return Entry{}, err
		}
		e.Bindings = append(e.Bindings, b)
	}
	return e, nil
}

func decodeBinding(raw json.RawMessage, path string) (Binding, error) {
	m, err := objectOf(raw, path)
	if err != nil {
		return Binding{}, err
	}
	d := &fieldDecoder{m: m, path: path}
	var b Binding
	d.get("target_path", &b.TargetPath)
	d.get("input_key", &b.InputKey)
	d.get("required", &b.Required)
	d.get("default", &b.Default)
	b.Extra = d.extra(bindingKeys)
	return b, d.err
}

// Canonical serialization: compact encoding/json in the format tables'
// field order, sorted map keys, empty optionals omitted, unknown keys last
// in sorted order.

type objWriter struct {
	buf bytes.Buffer
	n   int
	err error
}

func (w *objWriter) field(key string, v any) {
	if w.err != nil {
		return
	}
	if w.n == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	w.n++
	k, _ := json.Marshal(key)
	w.buf.Write(k)
	w.buf.WriteByte(':')
	raw, err := json.Marshal(v)
	if err != nil {
		w.err = fmt.Errorf("encode %s: %w", key, err)
		return
	}
	w.buf.Write(raw)
}

func (w *objWriter) str(key, v string, omitEmpty bool) {
	if omitEmpty && v == "" {
		return
	}
	w.field(key, v)
}

func (w *objWriter) extra(m map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		w.field(k, m[k])
	}
}

func (w *objWriter) done() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.n == 0 {
		return []byte("{}"), nil
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// MarshalJSON writes the canonical field order.
func (b Bundle) MarshalJSON() ([]byte, error) {
	w := &objWriter{}
	w.str("type", b.Type, false)
	w.str("cookbook_id", b.CookbookID, false)
	w.str("version", b.Version, false)
	w.str("title", b.Title, false)
	w.str("description", b.Description, true)
	if len(b.Tags) > 0 {
		w.field("tags", b.Tags)
	}
	entries := b.Entries
	if entries == nil {
		entries = []Entry{}
	}
	w.field("entries", entries)
	w.extra(b.Extra)
	return w.done()
}

// UnmarshalJSON accepts the same shapes as DecodeBundle (no validation).
func (b *Bundle) UnmarshalJSON(raw []byte) error {
	nb, err := decodeBundle(raw)
	if err != nil {
		return err
	}
	*b = *nb
	return nil
}

// MarshalJSON writes the canonical field order. Payload objects are written
// when present even if empty: "request": {} is valid and must survive.
func (e Entry) MarshalJSON() ([]byte, error) {
	w := &objWriter{}
	w.str("entry_id", e.EntryID, false)
	w.str("entry_type", e.EntryType, false)
	w.str("title", e.Title, true)
	w.str("description", e.Description, true)
	if len(e.Tags) > 0 {
		w.field("tags", e.Tags)
	}
	w.str("connector_id", e.ConnectorID, true)
	w.str("verb", e.Verb, true)
	w.str("policy_version", e.PolicyVersion, true)
	for _, kv := range []struct {
		k string
		v map[string]any
	}{{"request", e.Request}, {"plan", e.Plan}, {"plan_input_defaults", e.PlanInputDefaults}, {"base_request", e.BaseRequest}, {"base_plan", e.BasePlan}, {"input_schema", e.InputSchema}} {
		if kv.v != nil {
			w.field(kv.k, kv.v)
		}
	}
	if len(e.Bindings) > 0 {
		w.field("bindings", e.Bindings)
	}
	w.extra(e.Extra)
	return w.done()
}

// UnmarshalJSON decodes one entry.
func (e *Entry) UnmarshalJSON(raw []byte) error {
	ne, err := decodeEntry(raw, "")
	if err != nil {
		return err
	}
	*e = ne
	return nil
}

// MarshalJSON writes the canonical field order.
func (b Binding) MarshalJSON() ([]byte, error) {
	w := &objWriter{}
	w.str("target_path", b.TargetPath, false)
	w.str("input_key", b.InputKey, false)
	if b.Required != nil {
		w.field("required", *b.Required)
	}
	if b.Default != nil {
		w.field("default", b.Default)
	}
	w.extra(b.Extra)
	return w.done()
}

// UnmarshalJSON decodes one binding.
func (b *Binding) UnmarshalJSON(raw []byte) error {
	nb, err := decodeBinding(raw, "")
	if err != nil {
		return err
	}
	*b = nb
	return nil
}

// ---------------------------------------------------------------------------
// Canonicalization and hashing

// CanonicalTags trims, drops empties, deduplicates and sorts by byte order;
// an empty result is nil (absent).
func CanonicalTags(tags []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Canonicalize trims text fields, canonicalizes tags and sorts entries and
// bindings in place; validation, hashing and storage see this form.
func (b *Bundle) Canonicalize() {
	b.Type = strings.TrimSpace(b.Type)
	b.CookbookID = strings.TrimSpace(b.CookbookID)
	b.Version = strings.TrimSpace(b.Version)
	b.Title = strings.TrimSpace(b.Title)
	b.Description = strings.TrimSpace(b.Description)
	b.Tags = CanonicalTags(b.Tags)
	for i := range b.Entries {
		e := &b.Entries[i]
		e.EntryID = strings.TrimSpace(e.EntryID)
		e.EntryType = strings.TrimSpace(e.EntryType)
		e.Title = strings.TrimSpace(e.Title)
		e.Description = strings.TrimSpace(e.Description)
		e.ConnectorID = strings.TrimSpace(e.ConnectorID)
		e.Verb = strings.TrimSpace(e.Verb)
		e.PolicyVersion = strings.TrimSpace(e.PolicyVersion)
		e.Tags = CanonicalTags(e.Tags)
		// Binding fields are deliberately not trimmed (content hashes stay
		// the predecessor's); order is by raw target path then raw input key.
		sort.SliceStable(e.Bindings, func(x, y int) bool {
			bx, by := e.Bindings[x], e.Bindings[y]
			if bx.TargetPath != by.TargetPath {
				return bx.TargetPath < by.TargetPath
			}
			return bx.InputKey < by.InputKey
		})
	}
	sort.SliceStable(b.Entries, func(x, y int) bool { return b.Entries[x].EntryID < b.Entries[y].EntryID })
}

// Canonical returns the canonical serialization of b (which must already be
// canonicalized); it is also the stored form.
func (b *Bundle) Canonical() ([]byte, error) { return json.Marshal(b) }

// HashBytes is the content hash of a canonical serialization.
func HashBytes(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// ContentHash is the lowercase hex SHA-256 of the canonical serialization,
// unknown keys included.
func (b *Bundle) ContentHash() (string, error) {
	raw, err := b.Canonical()
	if err != nil {
		return "", err
	}
	return HashBytes(raw), nil
}

// Clone deep-copies b through its canonical JSON.
func (b *Bundle) Clone() (*Bundle, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	return decodeBundle(raw)
}

// IndexConnector is the entry's connector_id, or for plans the single
// distinct connector of its steps (empty when none or several).
func (e *Entry) IndexConnector() string {
	if e.ConnectorID != "" {
		return e.ConnectorID
	}
	var plan map[string]any
	switch e.EntryType {
	case TypeRecipePlan:
		plan = e.Plan
	case TypeTemplatePlan:
		plan = e.BasePlan
	default:
		return ""
	}
	steps, _ := plan["steps"].([]any)
	found := ""
	for _, s := range steps {
		m, _ := s.(map[string]any)
		c, _ := m["connector_id"].(string)
		c = strings.TrimSpace(c)
		if c == "" {
			continue
		}
		if found != "" && found != c {
			return ""
		}
		found = c
	}
	return found
}
