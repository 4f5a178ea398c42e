package tools

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset catalog: the local cookbook catalog. These tools never call
// Vaultclaw.

type cookbooksListFilter struct {
	Query      string `json:"query,omitempty"`
	CookbookID string `json:"cookbook_id,omitempty"`
	Tag        string `json:"tag,omitempty"`
}

type cookbooksListIn struct {
	Filter     *cookbooksListFilter `json:"filter,omitempty"`
	LatestOnly bool                 `json:"latest_only,omitempty"`
	Full       bool                 `json:"full,omitempty" jsonschema:"with entries and root_dir"`
	Limit      int                  `json:"limit,omitempty"`
	Cursor     string               `json:"cursor,omitempty"`
}

type cookbookRefIn struct {
	CookbookID string `json:"cookbook_id"`
	Version    string `json:"version,omitempty"`
}

type cookbookUpsertIn struct {
	Bundle         map[string]any `json:"bundle" jsonschema:"accords.cookbook.bundle.v1"`
	ConflictPolicy string         `json:"conflict_policy,omitempty" jsonschema:"FAIL, OVERWRITE or SKIP_IF_EXISTS"`
}

type recipeGetIn struct {
	CookbookID string `json:"cookbook_id"`
	RecipeID   string `json:"recipe_id"`
	Version    string `json:"version,omitempty"`
}

type recipesSearchIn struct {
	Query       string     `json:"query,omitempty"`
	ConnectorID string     `json:"connector_id,omitempty"`
	Verb        string     `json:"verb,omitempty"`
	Tags        StringList `json:"tags,omitempty"`
	EntryType   string     `json:"entry_type,omitempty"`
	CookbookID  string     `json:"cookbook_id,omitempty"`
	AllVersions bool       `json:"all_versions,omitempty"`
	Limit       int        `json:"limit,omitempty"`
}

type templateRenderIn struct {
	CookbookID string         `json:"cookbook_id"`
	TemplateID string         `json:"template_id"`
	Version    string         `json:"version,omitempty"`
	Inputs     map[string]any `json:"inputs"`
	OutputKind string         `json:"output_kind,omitempty"`
}

var cookbooksList = Define(Tool{
	Name:        "vaultclaw_cookbooks_list",
	Description: "List stored cookbooks; to find a recipe, search instead.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedCatalog,
	Output:      obj("items", objs(), "next_cursor", str()),
}, func(s *jsonschema.Schema) {
	Default(s, "limit", 100)
	Range(s, "limit", 1, 1000)
}, listCookbooks)

func listCookbooks(ctx context.Context, d *Deps, _ *Call, in cookbooksListIn) (Result, error) {
	f := catalog.ListFilter{LatestOnly: in.LatestOnly, Limit: in.Limit, After: in.Cursor}
	if in.Filter != nil {
		f.Query, f.CookbookID, f.Tag = in.Filter.Query, in.Filter.CookbookID, in.Filter.Tag
	}
	page, err := d.Catalog.ListPage(ctx, f)
	if err != nil {
		return Result{}, err
	}
	out := map[string]any{"items": page.Items, "next_cursor": page.NextCursor}
	if in.Full {
		out["root_dir"] = d.Catalog.DBPath()
	} else {
		// A listing names cookbooks; their entries are a search or a
		// cookbook_get away, and the server's path is nobody's business
		// unless asked.
		items := make([]catalog.Item, len(page.Items))
		for i, it := range page.Items {
			it.Entries = nil
			items[i] = it
		}
		out["items"] = items
	}
	return OK(out)
}

type cookbookGetIn struct {
	CookbookID string `json:"cookbook_id"`
	Version    string `json:"version,omitempty"`
	Limit      int    `json:"limit,omitempty" jsonschema:"entries per page"`
	Cursor     string `json:"cursor,omitempty" jsonschema:"a next_cursor"`
}

var cookbookGet = Define(Tool{
	Name:        "vaultclaw_cookbook_get",
	Description: "Return one stored cookbook bundle, its entries a page at a time.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedCatalog,
	Output:      obj("bundle", obj(), "next_cursor", str()),
}, func(s *jsonschema.Schema) {
	Default(s, "limit", cookbookPage)
	Range(s, "limit", 1, 500)
}, getCookbookPage)

// cookbookPage is the default number of entries per vaultclaw_cookbook_get
// page: a cookbook that fits is returned whole, as stored.
const cookbookPage = 50

// getCookbookPage returns the bundle with at most in.Limit of its entries,
// from the cursor on. The cursor is "<offset>@<version>", so every page
// of one listing comes from the same version even if a newer one lands.
// next_cursor is present only when entries remain.
func getCookbookPage(ctx context.Context, d *Deps, _ *Call, in cookbookGetIn) (Result, error) {
	offset, version := 0, in.Version
	if in.Cursor != "" {
		o, v, ok := strings.Cut(in.Cursor, "@")
		n, err := strconv.Atoi(o)
		if !ok || err != nil || n < 0 || v == "" || (version != "" && version != v) {
			return Result{}, apperr.Validation("cursor", "cursor %q is not a next_cursor of this cookbook; call again without cursor to start over", in.Cursor)
		}
		offset, version = n, v
	}
	raw, err := d.Catalog.Export(ctx, in.CookbookID, version)
	if err != nil {
		return Result{}, err
	}
	var bundle map[string]json.RawMessage
	var entries []json.RawMessage
	if err := json.Unmarshal(raw, &bundle); err != nil {
		return Result{}, apperr.Internal("reading the stored cookbook", err)
	}
	if e, ok := bundle["entries"]; ok {
		if err := json.Unmarshal(e, &entries); err != nil {
			return Result{}, apperr.Internal("reading the stored cookbook's entries", err)
		}
	}
	limit := in.Limit
	if limit <= 0 {
		limit = cookbookPage
	}
	if offset == 0 && len(entries) <= limit {
		return OK(map[string]any{"bundle": raw})
	}
	if offset > len(entries) {
		return Result{}, apperr.Validation("cursor", "cursor %q is past the cookbook's %d entries; call again without cursor to start over", in.Cursor, len(entries))
	}
	end := min(offset+limit, len(entries))
	page, err := json.Marshal(entries[offset:end])
	if err != nil {
		return Result{}, apperr.Internal("paging the cookbook", err)
	}
	bundle["entries"] = page
	out := map[string]any{"bundle": bundle}
	if end < len(entries) {
		var ver string
		_ = json.Unmarshal(bundle["version"], &ver)
		out["next_cursor"] = strconv.Itoa(end) + "@" + ver
	}
	return OK(out)
}

var cookbookExport = Define(Tool{
	Name:        "vaultclaw_cookbook_export",
	Description: "Export a cookbook bundle as stored, to import elsewhere.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedCatalog,
	Output:      obj("bundle", obj()),
}, nil, getCookbook)

// getCookbook serves export whole: the stored form is the export form.
func getCookbook(ctx context.Context, d *Deps, _ *Call, in cookbookRefIn) (Result, error) {
	raw, err := d.Catalog.Export(ctx, in.CookbookID, in.Version)
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"bundle": raw})
}

var cookbookUpsert = Define(Tool{
	Name:        "vaultclaw_cookbook_upsert",
	Description: "Store a cookbook bundle you wrote (same as import).",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogWrite,
	Effect:      ReplacesLocal,
	Needs:       NeedCatalog,
	Output:      cookbookStored(),
}, nil, upsertCookbook)

var cookbookImport = Define(Tool{
	Name:        "vaultclaw_cookbook_import",
	Description: "Store an exported bundle (same as upsert; remote: remote_install).",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogWrite,
	Effect:      ReplacesLocal,
	Needs:       NeedCatalog,
	Output:      cookbookStored(),
}, nil, upsertCookbook)

// cookbookStored is catalog.UpsertResult.
func cookbookStored() *jsonschema.Schema {
	return obj("cookbook", obj(), "outcome", str())
}

// upsertCookbook serves upsert and import (the predecessor had both names).
func upsertCookbook(ctx context.Context, d *Deps, _ *Call, in cookbookUpsertIn) (Result, error) {
	policy, err := catalog.NormalizePolicy(in.ConflictPolicy)
	if err != nil {
		return Result{}, err
	}
	b, err := catalog.BundleFromValue(in.Bundle)
	if err != nil {
		return Result{}, err
	}
	res, err := d.Catalog.Upsert(ctx, b, catalog.UpsertOptions{Policy: policy})
	if err != nil {
		return Result{}, err
	}
	return OK(res)
}

var cookbookDelete = Define(Tool{
	Name:        "vaultclaw_cookbook_delete",
	Description: "Delete a cookbook version; without version, the latest.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogWrite,
	Effect:      DeletesLatest,
	Needs:       NeedCatalog,
	Output:      obj("deleted", boolean()),
}, nil, deleteCookbook)

func deleteCookbook(ctx context.Context, d *Deps, _ *Call, in cookbookRefIn) (Result, error) {
	res, err := d.Catalog.Delete(ctx, in.CookbookID, in.Version)
	if err != nil {
		return Result{}, err
	}
	return OK(res)
}

var recipeGet = Define(Tool{
	Name:        "vaultclaw_recipe_get",
	Description: "Return one recipe or template, e.g. a search hit.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedCatalog,
	Output:      obj("entry", obj()),
}, nil, getRecipe)

func getRecipe(ctx context.Context, d *Deps, _ *Call, in recipeGetIn) (Result, error) {
	res, err := d.Catalog.Entry(ctx, in.CookbookID, in.Version, in.RecipeID)
	if err != nil {
		return Result{}, err
	}
	return OK(res)
}

var recipesSearch = Define(Tool{
	Name:        "vaultclaw_recipes_search",
	Description: "Find recipes and templates for a task, before rendering.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedCatalog,
	Narrowed:    map[string]*jsonschema.Schema{"tags": strs()},
	Output:      obj("items", objs()),
}, func(s *jsonschema.Schema) {
	Enum(s, "entry_type", catalog.EntryTypes...)
	Range(s, "limit", 0, index.MaxLimit)
	Default(s, "limit", searchDefaultLimit)
}, searchRecipes)

// A search answers the question asked: searchDefaultLimit hits unless the
// caller asks for more, and with free text none scoring below
// searchRelativeCutoff of the best hit (a hit that far below matched a
// stray word). The order is the index's (D7).
const (
	searchDefaultLimit   = 10
	searchRelativeCutoff = 0.25
)

// searchHit is a hit as the tool returns it: what identifies the entry and
// says what it does; latest only when all_versions mixes versions.
type searchHit struct {
	CookbookID  string  `json:"cookbook_id"`
	Version     string  `json:"version"`
	EntryID     string  `json:"entry_id"`
	EntryType   string  `json:"entry_type"`
	Title       string  `json:"title,omitempty"`
	ConnectorID string  `json:"connector_id,omitempty"`
	Verb        string  `json:"verb,omitempty"`
	Latest      *bool   `json:"latest,omitempty"`
	Score       float64 `json:"score"`
}

// shapeHits applies the relative cut-off (with free text) and the compact
// hit form, keeping the order.
func shapeHits(hits []index.Hit, text string, allVersions bool) []searchHit {
	floor := 0.0
	if strings.TrimSpace(text) != "" && len(hits) > 0 {
		floor = hits[0].Score * searchRelativeCutoff
	}
	out := make([]searchHit, 0, len(hits))
	for _, h := range hits {
		if h.Score < floor {
			continue
		}
		sh := searchHit{CookbookID: h.CookbookID, Version: h.Version, EntryID: h.EntryID, EntryType: h.EntryType,
			Title: h.Title, ConnectorID: h.ConnectorID, Verb: h.Verb, Score: h.Score}
		if allVersions {
			sh.Latest = &h.Latest
		}
		out = append(out, sh)
	}
	return out
}

func searchRecipes(ctx context.Context, d *Deps, _ *Call, in recipesSearchIn) (Result, error) {
	res, err := d.Catalog.Search(ctx, index.Query{
		Text: in.Query, CookbookID: strings.TrimSpace(in.CookbookID), ConnectorID: strings.TrimSpace(in.ConnectorID),
		Verb: strings.TrimSpace(in.Verb), Tags: catalog.CanonicalTags(in.Tags), EntryType: in.EntryType,
		AllVersions: in.AllVersions, Limit: in.Limit,
	})
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"items": shapeHits(res.Items, in.Query, in.AllVersions), "total": res.Total})
}

var templateRender = Define(Tool{
	Name:        "vaultclaw_template_render",
	Description: "Fill a template into a request or plan to execute; runs nothing.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedCatalog,
	Output:      obj("rendered", obj(), "missing_inputs", objs()),
}, nil, renderTemplate)

func renderTemplate(ctx context.Context, d *Deps, _ *Call, in templateRenderIn) (Result, error) {
	res, err := d.Catalog.Render(ctx, catalog.RenderRequest{CookbookID: in.CookbookID, TemplateID: in.TemplateID,
		Version: in.Version, Inputs: in.Inputs, OutputKind: in.OutputKind})
	if err != nil {
		return Result{}, err
	}
	return Result{Data: res, Meta: envelope.Meta{Warnings: res.Warnings}}, nil
}
