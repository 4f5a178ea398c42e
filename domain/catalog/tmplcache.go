package catalog

import (
	"bytes"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	lru "github.com/hashicorp/golang-lru/v2"
)

// templateCacheSize bounds the templates kept decoded: enough for the
// templates an agent renders again and again, small next to the catalog
// (a few MiB at most at the bundle size cap of stored bytes kept for the
// comparison below; typically tens of KiB).
const templateCacheSize = 256

// templateCache keeps the templates renders used last, decoded, with their
// compiled input schemas: a render otherwise spends most of its time
// decoding the stored bundle and compiling the schema. An entry is used
// only while the stored bytes it was decoded from are still the ones
// stored, compared in full, so no write (here, on another replica, or a
// restore) can make a render use a stale template.
type templateCache struct {
	lru *lru.Cache[templateKey, *cachedTemplate]
}

type templateKey struct{ cookbookID, version, entryID string }

// cachedTemplate is read-only once cached: RenderEntry copies the base
// before binding inputs into it.
type cachedTemplate struct {
	raw    []byte // the stored bundle it was decoded from
	bundle *Bundle
	// schema is compiled once, on first use (nil until then, or when the
	// entry has no input schema).
	schemaOnce sync.Once
	schema     *jsonschema.Resolved
	schemaErr  error
}

func newTemplateCache() *templateCache {
	c, err := lru.New[templateKey, *cachedTemplate](templateCacheSize)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &templateCache{lru: c}
}

// get returns the cached template of key when it was decoded from raw.
func (c *templateCache) get(key templateKey, raw []byte) *cachedTemplate {
	t, ok := c.lru.Get(key)
	if !ok || !bytes.Equal(t.raw, raw) {
		return nil
	}
	return t
}

func (c *templateCache) put(key templateKey, raw []byte, b *Bundle) *cachedTemplate {
	t := &cachedTemplate{raw: bytes.Clone(raw), bundle: b}
	c.lru.Add(key, t)
	return t
}

// inputSchema is the entry's compiled input schema (nil when it has none).
func (t *cachedTemplate) inputSchema() (*jsonschema.Resolved, error) {
	t.schemaOnce.Do(func() {
		if len(t.bundle.Entries) == 1 && t.bundle.Entries[0].InputSchema != nil {
			t.schema, t.schemaErr = compileInputSchema(t.bundle.Entries[0].InputSchema)
		}
	})
	return t.schema, t.schemaErr
}

// schemaCacheSize bounds the compiled input schemas kept, and
// schemaCacheMaxBytes the size of one kept: a few MiB at most.
const (
	schemaCacheSize     = 512
	schemaCacheMaxBytes = 8 << 10
)

// schemaCache maps the canonical JSON of an input schema to its compiled
// form. A compiled schema is never changed after Resolve (Validate keeps
// its state per call), so one is shared by every template that has it.
type schemaCache struct {
	lru *lru.Cache[string, *jsonschema.Resolved]
}

var compiledSchemas = newSchemaCache()

func newSchemaCache() *schemaCache {
	c, err := lru.New[string, *jsonschema.Resolved](schemaCacheSize)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &schemaCache{lru: c}
}

func (c *schemaCache) get(raw []byte) *jsonschema.Resolved {
	rs, _ := c.lru.Get(string(raw))
	return rs
}

func (c *schemaCache) put(raw []byte, rs *jsonschema.Resolved) {
	if len(raw) <= schemaCacheMaxBytes {
		c.lru.Add(string(raw), rs)
	}
}
