package legacy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/catalog/remote"
	"github.com/accordsai/accords-mcp/platform/apperr"
)

// Services imports through the catalog and the remote-source service.
type Services struct {
	Catalog *catalog.Service
	Remote  *remote.Service
}

// ImportBundle implements Importer.
func (s Services) ImportBundle(ctx context.Context, raw json.RawMessage, policy string) (Outcome, string, error) {
	b, err := catalog.DecodeBundle(raw)
	if err != nil {
		return Refused, "", describe(err)
	}
	res, err := s.Catalog.Upsert(ctx, b, catalog.UpsertOptions{Policy: policy})
	if err != nil {
		if apperr.Is(err, apperr.CodeCatalogConflict) {
			return Skipped, "a different bundle with this id and version exists (conflict policy FAIL)", nil
		}
		return Refused, "", describe(err)
	}
	switch res.Outcome {
	case catalog.OutcomeCreated:
		return Imported, "", nil
	case catalog.OutcomeUpdated:
		return Imported, "replaced the existing bundle (conflict policy OVERWRITE)", nil
	case catalog.OutcomeUnchanged:
		return Skipped, "already present with the same content", nil
	default:
		return Skipped, "a different bundle with this id and version exists (conflict policy SKIP_IF_EXISTS)", nil
	}
}

// legacySource is a predecessor source record; enabled is raw so that a
// non-bool is refused as the predecessor did ("source decode failed").
type legacySource struct {
	SourceID   string          `json:"source_id"`
	IndexURL   string          `json:"index_url"`
	Enabled    json.RawMessage `json:"enabled"`
	AuthMode   string          `json:"auth_mode"`
	AuthEnvVar string          `json:"auth_env_var"`
}

// ImportSource implements Importer.
func (s Services) ImportSource(ctx context.Context, raw json.RawMessage, policy string) (Outcome, string, error) {
	if s.Remote == nil {
		return Refused, "", fmt.Errorf("this build has no remote catalog sources")
	}
	var ls legacySource
	if err := json.Unmarshal(raw, &ls); err != nil {
		return Refused, "", fmt.Errorf("source decode failed: %w", err)
	}
	in := remote.SourceInput{SourceID: ls.SourceID, IndexURL: ls.IndexURL, AuthMode: ls.AuthMode, AuthEnvVar: ls.AuthEnvVar}
	if len(ls.Enabled) > 0 && string(ls.Enabled) != "null" {
		var en bool
		if err := json.Unmarshal(ls.Enabled, &en); err != nil {
			return Refused, "", fmt.Errorf("source decode failed: enabled must be true or false")
		}
		in.Enabled = &en
	}
	existing, err := s.Remote.Sources()
	if err != nil {
		return Refused, "", describe(err)
	}
	id := strings.TrimSpace(ls.SourceID)
	for _, ex := range existing {
		if ex.SourceID != id {
			continue
		}
		if sameSource(ex, in) {
			return Skipped, "already present with the same settings", nil
		}
		if policy != PolicyOverwrite {
			return Skipped, fmt.Sprintf("a source with this id and different settings exists (conflict policy %s)", policy), nil
		}
	}
	_, created, err := s.Remote.UpsertSource(in)
	if err != nil {
		return Refused, "", describe(err)
	}
	if !created {
		return Imported, "replaced the existing source (conflict policy OVERWRITE)", nil
	}
	return Imported, "", nil
}

func sameSource(ex remote.Source, in remote.SourceInput) bool {
	enabled := true
	if in.Enabled != nil {
		enabled = *in.Enabled
	}
	mode := strings.ToUpper(strings.TrimSpace(in.AuthMode))
	if mode == "" {
		mode = remote.AuthNone
	}
	envVar := strings.TrimSpace(in.AuthEnvVar)
	if mode == remote.AuthNone {
		envVar = ""
	}
	return ex.IndexURL == strings.TrimSpace(in.IndexURL) && ex.Enabled == enabled && ex.AuthMode == mode && ex.AuthEnvVar == envVar
}

// describe turns a service error into one line: the message and the field
// it names.
func describe(err error) error {
	ae := apperr.As(err)
	msg := ae.Message
	if f, ok := ae.Details["field"].(string); ok && f != "" && !strings.Contains(msg, f) {
		msg += " (" + f + ")"
	}
	return fmt.Errorf("%s: %s", ae.Code, msg)
}
