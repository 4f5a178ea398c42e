package catalog

import (
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/ident"
)

// IDPattern is the charset of cookbook and entry ids (decision D6), as
// messages and schemas state it; ident.ID checks it.
const IDPattern = `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`

// MaxVersionLen bounds version strings, like ids.
const MaxVersionLen = 128

// ValidID reports whether s is an acceptable cookbook or entry id.
func ValidID(s string) bool { return ident.ID.Valid(s) }

// ParseVersion parses a strict semantic version (MAJOR.MINOR.PATCH with
// optional pre-release and build metadata, no "v" prefix).
func ParseVersion(s string) (*semver.Version, bool) {
	if s == "" || len(s) > MaxVersionLen {
		return nil, false
	}
	v, err := semver.StrictNewVersion(s)
	if err != nil {
		return nil, false
	}
	return v, true
}

// CompareVersions orders valid versions by semver precedence, equal
// precedence by raw text (a total order); invalid strings sort first.
func CompareVersions(a, b string) int {
	va, oka := ParseVersion(a)
	vb, okb := ParseVersion(b)
	switch {
	case oka && okb:
		if c := va.Compare(vb); c != 0 {
			return c
		}
	case oka:
		return 1
	case okb:
		return -1
	}
	return strings.Compare(a, b)
}

// clip shortens hostile values echoed in error details.
func clip(s string) string {
	const max = 140
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

func schemaErr(msg string) *apperr.Error {
	return apperr.New(apperr.CodeCatalogSchemaInvalid, "%s", msg)
}

// CheckCookbookID validates a cookbook id argument (get, delete, render).
func CheckCookbookID(id string) error {
	if id == "" {
		return apperr.Validation("cookbook_id", "cookbook_id is required")
	}
	if !ValidID(id) {
		return schemaErr("cookbook_id must match "+IDPattern).With("field", "cookbook_id").With("cookbook_id", clip(id)).With("pattern", IDPattern)
	}
	return nil
}

// CheckVersion validates an explicit version argument.
func CheckVersion(v string) error {
	if _, ok := ParseVersion(v); !ok {
		return schemaErr("version must be a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])").With("field", "version").With("version", clip(v))
	}
	return nil
}

// Validate checks a canonicalized bundle rule by rule, the first failure
// winning; the id must match IDPattern and the version be semver (D6).
func (b *Bundle) Validate() error {
	if err := b.checkLimits(); err != nil {
		return err
	}
	if b.Type != BundleType {
		return schemaErr("bundle.type must be " + BundleType)
	}
	if b.CookbookID == "" {
		return schemaErr("bundle.cookbook_id is required")
	}
	if b.Version == "" {
		return schemaErr("bundle.version is required")
	}
	if b.Title == "" {
		return schemaErr("bundle.title is required")
	}
	if len(b.Entries) == 0 {
		return schemaErr("bundle.entries must be non-empty")
	}
	seen := map[string]bool{}
	for i := range b.Entries {
		e := &b.Entries[i]
		if e.EntryID == "" {
			return schemaErr("entry.entry_id is required").With("entry_index", i)
		}
		if !ValidID(e.EntryID) {
			return schemaErr("entry.entry_id must match "+IDPattern).With("entry_index", i).With("entry_id", clip(e.EntryID)).With("pattern", IDPattern)
		}
		if seen[e.EntryID] {
			return schemaErr("duplicate entry_id in bundle").With("entry_id", e.EntryID)
		}
		seen[e.EntryID] = true
		if err := e.validate(); err != nil {
			return err
		}
	}
	if !ValidID(b.CookbookID) {
		return schemaErr("bundle.cookbook_id must match "+IDPattern).With("cookbook_id", clip(b.CookbookID)).With("pattern", IDPattern)
	}
	if _, ok := ParseVersion(b.Version); !ok {
		return schemaErr("bundle.version must be a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])").With("version", clip(b.Version))
	}
	return nil
}

func (e *Entry) validate() error {
	id := e.EntryID
	switch e.EntryType {
	case TypeRecipeVerb:
		if e.ConnectorID == "" {
			return schemaErr("recipe.verb.v1 requires connector_id").With("entry_id", id)
		}
		if e.Verb == "" {
			return schemaErr("recipe.verb.v1 requires verb").With("entry_id", id)
		}
		if e.Request == nil {
			return schemaErr("recipe.verb.v1 requires request object").With("entry_id", id)
		}
	case TypeRecipePlan:
		if e.Plan == nil {
			return schemaErr("recipe.plan.v1 requires plan object").With("entry_id", id)
		}
	case TypeTemplateVerb, TypeTemplatePlan:
		if e.EntryType == TypeTemplateVerb && e.BaseRequest == nil {
			return schemaErr("template.verb.v1 requires base_request object").With("entry_id", id)
		}
		if e.EntryType == TypeTemplatePlan && e.BasePlan == nil {
			return schemaErr("template.plan.v1 requires base_plan object").With("entry_id", id)
		}
		pairs := map[[2]string]bool{}
		for i, bd := range e.Bindings {
			tp := strings.TrimSpace(bd.TargetPath)
			ik := strings.TrimSpace(bd.InputKey)
			if tp == "" {
				return schemaErr("binding.target_path is required").With("binding_index", i).With("entry_id", id)
			}
			if !strings.HasPrefix(tp, "/") {
				return schemaErr("binding.target_path must be valid json pointer").With("binding_index", i).With("target_path", bd.TargetPath).With("entry_id", id)
			}
			// Escapes are checked at upsert too, so a template that can
			// never render is rejected when it is stored.
			if _, err := parsePointer(bd.TargetPath); err != nil {
				return schemaErr("binding.target_path must be valid json pointer").With("binding_index", i).With("target_path", bd.TargetPath).With("entry_id", id).With("cause", err.Error())
			}
			if ik == "" {
				return schemaErr("binding.input_key is required").With("binding_index", i).With("entry_id", id)
			}
			k := [2]string{tp, ik}
			if pairs[k] {
				return schemaErr("duplicate binding target_path+input_key").With("binding_index", i).With("target_path", bd.TargetPath).With("input_key", bd.InputKey).With("entry_id", id)
			}
			pairs[k] = true
		}
		if e.InputSchema != nil {
			if _, err := compileInputSchema(e.InputSchema); err != nil {
				return schemaErr("input_schema is not a valid JSON schema").With("entry_id", id).With("cause", err.Error())
			}
		}
	default:
		return schemaErr("unsupported entry_type").With("entry_type", e.EntryType).With("entry_id", id)
	}
	return nil
}

// Prepare canonicalizes and validates b, returning its canonical bytes and
// content hash (the stored form).
func Prepare(b *Bundle) (canonical []byte, hash string, err error) {
	b.Canonicalize()
	if err := b.Validate(); err != nil {
		return nil, "", err
	}
	raw, err := b.Canonical()
	if err != nil {
		return nil, "", schemaErr("bundle schema decode failed").With("cause", err.Error())
	}
	return raw, HashBytes(raw), nil
}
