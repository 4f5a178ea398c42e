package catalog

import (
	"fmt"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Bundle limits (docs/security.md), enforced by Service.Upsert on every
// path that stores a bundle; a bundle over one is
// MCP_CATALOG_SCHEMA_INVALID naming the field and the limit.
const (
	// DefaultMaxBundleBytes caps the canonical JSON of one bundle, as the
	// remote install caps a download (ACCORDS_MCP_CATALOG_MAX_BUNDLE_BYTES).
	DefaultMaxBundleBytes = 4 << 20
	MaxEntries            = 1000
	MaxTitleBytes         = 512
	MaxDescriptionBytes   = 16 << 10
	MaxTags               = 64
	MaxTagBytes           = 128
	MaxBindings           = 256
	// MaxNameBytes bounds connector ids, verbs, policy versions, binding
	// target paths and input keys.
	MaxNameBytes = 1024
)

func tooLong(field string, got, max int) *apperr.Error {
	return schemaErr(fmt.Sprintf("%s must be at most %d bytes, got %d", field, max, got)).
		With("field", field).With("max_bytes", max)
}

func tooMany(field string, got, max int) *apperr.Error {
	return schemaErr(fmt.Sprintf("%s must have at most %d items, got %d", field, max, got)).
		With("field", field).With("max_items", max)
}

func checkTags(field string, tags []string) error {
	if len(tags) > MaxTags {
		return tooMany(field, len(tags), MaxTags)
	}
	for i, t := range tags {
		if len(t) > MaxTagBytes {
			return tooLong(fmt.Sprintf("%s[%d]", field, i), len(t), MaxTagBytes)
		}
	}
	return nil
}

// checkLimits applies the size limits to a canonicalized bundle. Ids and
// versions have their own patterns (128 characters).
func (b *Bundle) checkLimits() error {
	if len(b.Title) > MaxTitleBytes {
		return tooLong("bundle.title", len(b.Title), MaxTitleBytes)
	}
	if len(b.Description) > MaxDescriptionBytes {
		return tooLong("bundle.description", len(b.Description), MaxDescriptionBytes)
	}
	if err := checkTags("bundle.tags", b.Tags); err != nil {
		return err
	}
	if len(b.Entries) > MaxEntries {
		return tooMany("bundle.entries", len(b.Entries), MaxEntries)
	}
	for i := range b.Entries {
		e := &b.Entries[i]
		at := fmt.Sprintf("bundle.entries[%d].", i)
		for _, f := range []struct {
			name, val string
			max       int
		}{
			{"title", e.Title, MaxTitleBytes}, {"description", e.Description, MaxDescriptionBytes},
			{"connector_id", e.ConnectorID, MaxNameBytes}, {"verb", e.Verb, MaxNameBytes}, {"policy_version", e.PolicyVersion, MaxNameBytes},
		} {
			if len(f.val) > f.max {
				return tooLong(at+f.name, len(f.val), f.max)
			}
		}
		if err := checkTags(at+"tags", e.Tags); err != nil {
			return err
		}
		if len(e.Bindings) > MaxBindings {
			return tooMany(at+"bindings", len(e.Bindings), MaxBindings)
		}
		for j, bd := range e.Bindings {
			if len(bd.TargetPath) > MaxNameBytes {
				return tooLong(fmt.Sprintf("%sbindings[%d].target_path", at, j), len(bd.TargetPath), MaxNameBytes)
			}
			if len(bd.InputKey) > MaxNameBytes {
				return tooLong(fmt.Sprintf("%sbindings[%d].input_key", at, j), len(bd.InputKey), MaxNameBytes)
			}
		}
	}
	return nil
}

// checkSize refuses a canonical form larger than max bytes.
func checkSize(canonical []byte, max int64) error {
	if int64(len(canonical)) > max {
		return schemaErr(fmt.Sprintf("bundle must be at most %d bytes of canonical JSON, got %d", max, len(canonical))).
			With("field", "bundle").With("max_bytes", max).With("size_bytes", len(canonical))
	}
	return nil
}
