package tools

import (
	"context"
	"strings"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/index"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset catalog: the local cookbook catalog. These tools never call
// Vaultclaw.

type cookbooksListFilter struct {
	Query      string `json:"query,omitempty" jsonschema:"case-insensitive substring of the cookbook id, title, description or tags"`
	CookbookID string `json:"cookbook_id,omitempty" jsonschema:"exact cookbook id"`
	Tag        string `json:"tag,omitempty" jsonschema:"one cookbook tag, exact"`
}

type cookbooksListIn struct {
	Filter     *cookbooksListFilter `json:"filter,omitempty" jsonschema:"optional filters, ANDed"`
	LatestOnly bool                 `json:"latest_only,omitempty" jsonschema:"only the highest version of each cookbook; default false (all versions)"`
	Limit      int                  `json:"limit,omitempty" jsonschema:"most cookbooks per page (all their versions count as one); default 100"`
	Cursor     string               `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
}

type cookbookRefIn struct {
	CookbookID string `json:"cookbook_id" jsonschema:"cookbook id"`
	Version    string `json:"version,omitempty" jsonschema:"semantic version; the latest version when omitted"`
}

type cookbookUpsertIn struct {
	Bundle         map[string]any `json:"bundle" jsonschema:"an accords.cookbook.bundle.v1 object"`
	ConflictPolicy string         `json:"conflict_policy,omitempty" jsonschema:"FAIL (default), OVERWRITE or SKIP_IF_EXISTS: what to do when this id and version already exist with different content"`
}

type recipeGetIn struct {
	CookbookID string `json:"cookbook_id" jsonschema:"cookbook id"`
	RecipeID   string `json:"recipe_id" jsonschema:"entry id of the recipe or template"`
	Version    string `json:"version,omitempty" jsonschema:"semantic version; the latest version when omitted"`
}

type recipesSearchIn struct {
	Query       string     `json:"query,omitempty" jsonschema:"free text, matched against titles, descriptions, ids, connector, verb and tags and ranked by relevance"`
	ConnectorID string     `json:"connector_id,omitempty" jsonschema:"exact connector id"`
	Verb        string     `json:"verb,omitempty" jsonschema:"exact verb"`
	Tags        StringList `json:"tags,omitempty" jsonschema:"entry tags that must all be present: CSV string or string array"`
	EntryType   string     `json:"entry_type,omitempty" jsonschema:"recipe.verb.v1, recipe.plan.v1, template.verb.v1 or template.plan.v1"`
	CookbookID  string     `json:"cookbook_id,omitempty" jsonschema:"exact cookbook id"`
	AllVersions bool       `json:"all_versions,omitempty" jsonschema:"search every stored version instead of only the latest of each cookbook; default false"`
	Limit       int        `json:"limit,omitempty" jsonschema:"maximum hits; default 50, at most 1000"`
}

type templateRenderIn struct {
	CookbookID string         `json:"cookbook_id" jsonschema:"cookbook id"`
	TemplateID string         `json:"template_id" jsonschema:"entry id of a template.verb.v1 or template.plan.v1 entry"`
	Version    string         `json:"version,omitempty" jsonschema:"semantic version; the latest version when omitted"`
	Inputs     map[string]any `json:"inputs" jsonschema:"template inputs by input_key"`
	OutputKind string         `json:"output_kind,omitempty" jsonschema:"AUTO (default), VERB_REQUEST or PLAN"`
}

// catalogWrite are the hints of tools that store or replace bundles.
var catalogWrite = Hints{Destructive: true, Idempotent: true}

var cookbooksList = Define(Tool{
	Name:        "vaultclaw_cookbooks_list",
	Title:       "List cookbooks",
	Description: "List stored cookbook versions (sorted by id then semantic version) with their entries, a page of at most `limit` cookbooks at a time: pass next_cursor back as cursor for the next page (empty on the last). Local; never calls Vaultclaw.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Hints:       ReadLocal,
	Needs:       NeedCatalog,
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
	return OK(map[string]any{"items": page.Items, "next_cursor": page.NextCursor, "root_dir": d.Catalog.DBPath()})
}

var cookbookGet = Define(Tool{
	Name:        "vaultclaw_cookbook_get",
	Title:       "Get cookbook",
	Description: "Return one cookbook bundle in its canonical stored form (the latest version unless version is given).",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Hints:       ReadLocal,
	Needs:       NeedCatalog,
}, nil, getCookbook)

var cookbookExport = Define(Tool{
	Name:        "vaultclaw_cookbook_export",
	Title:       "Export cookbook",
	Description: "Export one cookbook bundle exactly as stored, including fields this server does not interpret, ready for import elsewhere.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Hints:       ReadLocal,
	Needs:       NeedCatalog,
}, nil, getCookbook)

// getCookbook serves get and export: the stored form is the export form.
func getCookbook(ctx context.Context, d *Deps, _ *Call, in cookbookRefIn) (Result, error) {
	st, err := d.Catalog.Get(ctx, in.CookbookID, in.Version)
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"bundle": st.Raw})
}

var cookbookUpsert = Define(Tool{
	Name:        "vaultclaw_cookbook_upsert",
	Title:       "Upsert cookbook",
	Description: "Validate and store a cookbook bundle (accords.cookbook.bundle.v1). Storing identical content again is a no-op; different content under an existing id and version follows conflict_policy.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogWrite,
	Hints:       catalogWrite,
	Needs:       NeedCatalog,
}, nil, upsertCookbook)

var cookbookImport = Define(Tool{
	Name:        "vaultclaw_cookbook_import",
	Title:       "Import cookbook",
	Description: "Import a cookbook bundle; identical to vaultclaw_cookbook_upsert.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogWrite,
	Hints:       catalogWrite,
	Needs:       NeedCatalog,
}, nil, upsertCookbook)

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
	Title:       "Delete cookbook version",
	Description: "Delete one cookbook version (the latest when version is omitted). A missing cookbook or version is MCP_CATALOG_NOT_FOUND.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogWrite,
	Hints:       Hints{Destructive: true},
	Needs:       NeedCatalog,
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
	Title:       "Get recipe",
	Description: "Return one entry (recipe or template) of a cookbook, from the latest version unless version is given.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Hints:       ReadLocal,
	Needs:       NeedCatalog,
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
	Title:       "Search recipes",
	Description: "Full-text search over cookbook entries, ranked by relevance (ties: higher version, then cookbook_id, entry_id). Only the latest version of each cookbook unless all_versions is true. Filters are exact. Hits carry score and version.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Hints:       ReadLocal,
	Needs:       NeedCatalog,
}, func(s *jsonschema.Schema) {
	csvOrArray(s, "tags")
	Enum(s, "entry_type", catalog.EntryTypes...)
	Range(s, "limit", 0, index.MaxLimit)
}, searchRecipes)

func searchRecipes(ctx context.Context, d *Deps, _ *Call, in recipesSearchIn) (Result, error) {
	res, err := d.Catalog.Search(ctx, index.Query{
		Text: in.Query, CookbookID: strings.TrimSpace(in.CookbookID), ConnectorID: strings.TrimSpace(in.ConnectorID),
		Verb: strings.TrimSpace(in.Verb), Tags: catalog.CanonicalTags(in.Tags), EntryType: in.EntryType,
		AllVersions: in.AllVersions, Limit: in.Limit,
	})
	if err != nil {
		return Result{}, err
	}
	return OK(res)
}

var templateRender = Define(Tool{
	Name:        "vaultclaw_template_render",
	Title:       "Render template",
	Description: "Render a template entry with inputs into a verb request or a plan. Nothing is executed: pass the result to the validate/execute tools.",
	Toolset:     ToolsetCatalog,
	Capability:  CapCatalogView,
	Hints:       ReadLocal,
	Needs:       NeedCatalog,
}, nil, renderTemplate)

func renderTemplate(ctx context.Context, d *Deps, _ *Call, in templateRenderIn) (Result, error) {
	res, err := d.Catalog.Render(ctx, catalog.RenderRequest{CookbookID: in.CookbookID, TemplateID: in.TemplateID,
		Version: in.Version, Inputs: in.Inputs, OutputKind: in.OutputKind})
	if err != nil {
		return Result{}, err
	}
	return OK(res)
}
