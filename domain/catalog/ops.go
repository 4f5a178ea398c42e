package catalog

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
)

// Conflict policies of upsert and import.
const (
	PolicyFail         = "FAIL"
	PolicyOverwrite    = "OVERWRITE"
	PolicySkipIfExists = "SKIP_IF_EXISTS"
)

// Policies lists the conflict policies.
var Policies = []string{PolicyFail, PolicyOverwrite, PolicySkipIfExists}

// NormalizePolicy trims and upper-cases p ("" is FAIL); an unknown policy is
// a validation error, never a silent FAIL (decision D2).
func NormalizePolicy(p string) (string, error) {
	p = strings.ToUpper(strings.TrimSpace(p))
	switch p {
	case "":
		return PolicyFail, nil
	case PolicyFail, PolicyOverwrite, PolicySkipIfExists:
		return p, nil
	}
	return "", apperr.Validation("conflict_policy", "conflict_policy must be one of FAIL, OVERWRITE, SKIP_IF_EXISTS").
		With("allowed", Policies).With("conflict_policy", clip(p))
}

// Upsert outcomes.
const (
	OutcomeCreated   = "created"
	OutcomeUpdated   = "updated"
	OutcomeUnchanged = "unchanged"
	OutcomeSkipped   = "skipped"
)

// UpsertResult is the data of upsert and import. Under SKIP_IF_EXISTS with
// different content, Cookbook is the existing bundle and ContentHash the
// incoming one's.
type UpsertResult struct {
	Cookbook         Item   `json:"cookbook"`
	CreatedOrUpdated bool   `json:"created_or_updated"`
	ConflictPolicy   string `json:"conflict_policy"`
	Outcome          string `json:"outcome"`
	ContentHash      string `json:"content_hash"`
}

// UpsertOptions tune Upsert.
type UpsertOptions struct {
	// Policy is FAIL (default), OVERWRITE or SKIP_IF_EXISTS.
	Policy string
	// InTx, when set, runs in the same write transaction once the bundle is
	// decided; an error rolls everything back (remote install's lock record).
	InTx func(tx store.Tx, res *UpsertResult) error
}

// Upsert canonicalizes, validates and stores b under the conflict policy;
// bundle, revision and InTx records commit in one transaction, then the
// index update is queued (a search applies it first).
func (s *Service) Upsert(ctx context.Context, b *Bundle, opts UpsertOptions) (*UpsertResult, error) {
	policy, err := NormalizePolicy(opts.Policy)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, schemaErr("bundle is required")
	}
	canonical, hash, err := Prepare(b)
	if err != nil {
		return nil, err
	}
	if err := checkSize(canonical, s.maxBundleBytes); err != nil {
		return nil, err
	}
	res := &UpsertResult{ConflictPolicy: policy, ContentHash: hash}
	err = s.write(ctx, func(w *writeTx) error {
		*res = UpsertResult{ConflictPolicy: policy, ContentHash: hash}
		existing, err := w.stored(b.CookbookID, b.Version)
		if err != nil {
			return err
		}
		write := true
		switch {
		case existing == nil:
			res.Outcome = OutcomeCreated
		case HashBytes(existing) == hash:
			res.Outcome, write = OutcomeUnchanged, false
		case policy == PolicyFail:
			return apperr.New(apperr.CodeCatalogConflict, "bundle already exists with different content").
				With("cookbook_id", b.CookbookID).With("version", b.Version).
				With("existing_content_hash", HashBytes(existing)).With("content_hash", hash)
		case policy == PolicySkipIfExists:
			res.Outcome, write = OutcomeSkipped, false
		default:
			res.Outcome = OutcomeUpdated
		}
		if write {
			if err := w.put(b, canonical, hash); err != nil {
				return err
			}
			res.CreatedOrUpdated = true
		}
		item, err := w.item(b.CookbookID, b.Version)
		if err != nil {
			return err
		}
		res.Cookbook = item
		if opts.InTx != nil {
			return opts.InTx(w.tx, res)
		}
		return nil
	})
	if err != nil {
		return nil, wrapStoreErr("upsert cookbook", err)
	}
	return res, nil
}

// item reads the list row of id@version with its latest flag.
func (w *writeTx) item(id, version string) (Item, error) {
	var it Item
	raw := w.root.Get(itemKey(id, version))
	if raw == nil {
		// A row lost by an older bug or manual edit: rebuild it.
		raw, err := w.stored(id, version)
		if err != nil {
			return it, err
		}
		if raw == nil {
			return it, notFoundVersion(id, version)
		}
		b, err := decodeBundle(raw)
		if err != nil {
			return it, err
		}
		it = itemOf(b, HashBytes(raw))
	} else if err := json.Unmarshal(raw, &it); err != nil {
		return it, err
	}
	it.Latest = latestVersion(w.root, id) == version
	return it, nil
}

// DeleteResult is the data of delete.
type DeleteResult struct {
	CookbookID string `json:"cookbook_id"`
	Version    string `json:"version"`
	Deleted    bool   `json:"deleted"`
}

// Delete removes id@version, or the latest (resolved inside the write
// transaction) when version is empty; missing is MCP_CATALOG_NOT_FOUND.
func (s *Service) Delete(ctx context.Context, id, version string) (*DeleteResult, error) {
	id, version, err := checkRef(id, version)
	if err != nil {
		return nil, err
	}
	res := &DeleteResult{CookbookID: id}
	err = s.write(ctx, func(w *writeTx) error {
		v, _, err := resolve(w.root, id, version)
		if err != nil {
			return err
		}
		res.Version = v
		if err := w.delete(id, v); err != nil {
			return err
		}
		res.Deleted = true
		return nil
	})
	if err != nil {
		return nil, wrapStoreErr("delete cookbook", err)
	}
	return res, nil
}

// RenderRequest asks for one template to be rendered.
type RenderRequest struct {
	CookbookID string
	TemplateID string
	Version    string
	Inputs     map[string]any
	OutputKind string
}

// Render renders a stored template. It never executes anything.
func (s *Service) Render(ctx context.Context, r RenderRequest) (*RenderResult, error) {
	tid := strings.TrimSpace(r.TemplateID)
	if strings.TrimSpace(r.CookbookID) == "" {
		return nil, apperr.Validation("cookbook_id", "cookbook_id is required")
	}
	if tid == "" {
		return nil, apperr.Validation("template_id", "template_id is required")
	}
	if _, err := NormalizeOutputKind(r.OutputKind); err != nil {
		return nil, err
	}
	b, err := s.template(r.CookbookID, r.Version, tid)
	if err != nil {
		return nil, err
	}
	if len(b.Entries) == 0 {
		return nil, apperr.New(apperr.CodeTemplateNotFound, "template not found in cookbook").
			With("cookbook_id", b.CookbookID).With("version", b.Version).With("template_id", clip(tid))
	}
	return RenderEntry(b, &b.Entries[0], r.Inputs, r.OutputKind)
}
