package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/catalog/remote"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset remote: remote cookbook sources and installing from them.

type sourceIn struct {
	SourceID      string `json:"source_id" jsonschema:"source identifier, [A-Za-z0-9][A-Za-z0-9._-]{0,127}; the upsert key"`
	IndexURL      string `json:"index_url" jsonschema:"http(s) URL of the accords.cookbook.index.v1 JSON"`
	Enabled       *bool  `json:"enabled,omitempty" jsonschema:"whether the source may be fetched; default true"`
	AuthMode      string `json:"auth_mode,omitempty" jsonschema:"NONE (default) or BEARER_ENV"`
	AuthEnvVar    string `json:"auth_env_var,omitempty" jsonschema:"for BEARER_ENV: name of the environment variable holding the token; the token itself is never stored and is only sent to the index URL's origin"`
	RequireSHA256 *bool  `json:"require_sha256,omitempty" jsonschema:"refuse installs that no SHA-256 digest (expected_sha256 or index sha256) can verify; default false"`
	// DownloadHosts bounds where installs may download from.
	DownloadHosts StringList `json:"download_hosts,omitempty" jsonschema:"hosts (host or host:port) the index's download_urls may point to, CSV string or string array; default: only the index URL's own origin. Items elsewhere are reported in invalid_items"`
}

type sourceUpsertIn struct {
	Source sourceIn `json:"source" jsonschema:"the whole source record (replaces any existing one)"`
}

type sourceIDIn struct {
	SourceID string `json:"source_id" jsonschema:"source identifier"`
}

type remoteListIn struct {
	SourceID string `json:"source_id" jsonschema:"source identifier"`
	Query    string `json:"query,omitempty" jsonschema:"case-insensitive substring of cookbook_id, version, title, summary or tags"`
}

type remoteInstallIn struct {
	SourceID          string `json:"source_id" jsonschema:"source identifier"`
	CookbookID        string `json:"cookbook_id" jsonschema:"cookbook to install"`
	Version           string `json:"version,omitempty" jsonschema:"exact version or semver constraint (^1.2, ~1.3.0, >=1.0 <2); default: the highest release"`
	ConflictPolicy    string `json:"conflict_policy,omitempty" jsonschema:"FAIL (default), OVERWRITE or SKIP_IF_EXISTS: what to do when this version is already stored with different content"`
	ExpectedSHA256    string `json:"expected_sha256,omitempty" jsonschema:"hex SHA-256 of the bundle file; checked together with the index's sha256"`
	IncludePrerelease bool   `json:"include_prerelease,omitempty" jsonschema:"let an empty version or a constraint select pre-releases; default false"`
}

var catalogSourcesList = Define(Tool{
	Name:        "vaultclaw_catalog_sources_list",
	Title:       "List remote catalog sources",
	Description: "List the configured remote cookbook sources (sorted by source_id) with the state of each one's cached index, and the download limits in force. Tokens are never shown, only the environment variable that holds them.",
	Toolset:     ToolsetRemote,
	Capability:  CapCatalogView,
	Hints:       ReadLocal,
	Needs:       NeedRemote,
}, nil, listCatalogSources)

func listCatalogSources(ctx context.Context, d *Deps, _ *Call, _ Empty) (Result, error) {
	views, err := d.Remote.SourceViews()
	if err != nil {
		return Result{}, err
	}
	maxIndex, maxBundle, timeout := d.Remote.Limits()
	return OK(map[string]any{
		"sources":  views,
		"root_dir": d.Remote.DBPath(),
		"limits":   map[string]any{"max_index_bytes": maxIndex, "max_bundle_bytes": maxBundle, "timeout_ms": timeout.Milliseconds()},
	})
}

var catalogSourceUpsert = Define(Tool{
	Name:        "vaultclaw_catalog_source_upsert",
	Title:       "Add or replace a remote catalog source",
	Description: "Create or replace (whole record, no merge) a remote cookbook source: an http(s) index URL serving accords.cookbook.index.v1. auth_mode BEARER_ENV reads the token from the named environment variable at request time and sends it only to the index URL's own origin, which must be https (plain http only to a loopback host). Downloads are limited to that origin unless download_hosts lists others. Does not contact the source.",
	Toolset:     ToolsetRemote,
	Capability:  CapRemoteInstall,
	Hints:       Hints{Idempotent: true},
	Needs:       NeedRemote,
}, func(s *jsonschema.Schema) {
	csvOrArray(Prop(s, "source"), "download_hosts")
}, upsertCatalogSource)

func upsertCatalogSource(ctx context.Context, d *Deps, _ *Call, in sourceUpsertIn) (Result, error) {
	src, created, err := d.Remote.UpsertSource(remote.SourceInput{
		SourceID: in.Source.SourceID, IndexURL: in.Source.IndexURL, Enabled: in.Source.Enabled,
		AuthMode: in.Source.AuthMode, AuthEnvVar: in.Source.AuthEnvVar, RequireSHA256: in.Source.RequireSHA256,
		DownloadHosts: in.Source.DownloadHosts,
	})
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"source": src, "created": created})
}

var catalogSourceDelete = Define(Tool{
	Name:        "vaultclaw_catalog_source_delete",
	Title:       "Delete a remote catalog source",
	Description: "Remove a remote cookbook source and its cached index. Installed cookbooks stay. Deleting a missing source returns deleted:false.",
	Toolset:     ToolsetRemote,
	Capability:  CapRemoteInstall,
	Hints:       Hints{Destructive: true, Idempotent: true},
	Needs:       NeedRemote,
}, nil, deleteCatalogSource)

func deleteCatalogSource(ctx context.Context, d *Deps, _ *Call, in sourceIDIn) (Result, error) {
	deleted, err := d.Remote.DeleteSource(in.SourceID)
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"source_id": in.SourceID, "deleted": deleted})
}

var cookbooksRemoteList = Define(Tool{
	Name:        "vaultclaw_cookbooks_remote_list",
	Title:       "List cookbooks of a remote source",
	Description: "Fetch a source's cookbook index (conditionally, with its ETag) and list its items, optionally filtered by query. Invalid items are reported in invalid_items and skipped. When the source is unreachable the last good copy is returned with stale:true and cached_at.",
	Toolset:     ToolsetRemote,
	Capability:  CapCatalogView,
	Hints:       ReadRemote,
	Needs:       NeedRemote,
}, nil, listRemoteCookbooks)

func listRemoteCookbooks(ctx context.Context, d *Deps, _ *Call, in remoteListIn) (Result, error) {
	l, err := d.Remote.List(ctx, in.SourceID, in.Query)
	if err != nil {
		return Result{}, err
	}
	return OK(l)
}

var cookbookRemoteInstall = Define(Tool{
	Name:        "vaultclaw_cookbook_remote_install",
	Title:       "Install a cookbook from a remote source",
	Description: "Install a cookbook version from a remote source: resolve the version (exact or semver constraint, highest match), download within the size limit, verify SHA-256 (expected_sha256 and the index sha256 must both match when given), validate the bundle, then store it with a lock record in one transaction. Nothing is stored on any failure. Reports integrity {verified, sha256, source}.",
	Toolset:     ToolsetRemote,
	Capability:  CapRemoteInstall,
	Hints:       Hints{Destructive: true, OpenWorld: true},
	Needs:       NeedRemote,
}, nil, installRemoteCookbook)

func installRemoteCookbook(ctx context.Context, d *Deps, c *Call, in remoteInstallIn) (Result, error) {
	res, err := d.Remote.Install(ctx, remote.InstallRequest{
		SourceID: in.SourceID, CookbookID: in.CookbookID, Version: in.Version, ConflictPolicy: in.ConflictPolicy,
		ExpectedSHA256: in.ExpectedSHA256, IncludePrerelease: in.IncludePrerelease,
		Progress: func(done, total int, stage string) { c.Progress(ctx, float64(done), float64(total), stage) },
	})
	if err != nil {
		return Result{}, err
	}
	return OK(map[string]any{"install": res, "conflict_policy": res.Policy})
}
