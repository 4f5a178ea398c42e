package tools

import (
	"context"

	"github.com/accordsai/accords-mcp/domain/catalog/remote"
)

// Toolset remote: remote cookbook sources and installing from them.

type sourceIn struct {
	SourceID      string `json:"source_id"`
	IndexURL      string `json:"index_url"`
	Enabled       *bool  `json:"enabled,omitempty"`
	AuthMode      string `json:"auth_mode,omitempty"`
	AuthEnvVar    string `json:"auth_env_var,omitempty" jsonschema:"variable holding the token"`
	RequireSHA256 *bool  `json:"require_sha256,omitempty"`
	// DownloadHosts bounds where installs may download from.
	DownloadHosts StringList `json:"download_hosts,omitempty" jsonschema:"default: the index URL's host"`
}

type sourceUpsertIn struct {
	Source sourceIn `json:"source"`
}

type sourceIDIn struct {
	SourceID string `json:"source_id"`
}

type remoteListIn struct {
	SourceID string `json:"source_id"`
	Query    string `json:"query,omitempty"`
}

type remoteInstallIn struct {
	SourceID          string `json:"source_id"`
	CookbookID        string `json:"cookbook_id"`
	Version           string `json:"version,omitempty" jsonschema:"or a constraint, e.g. ^1.2"`
	ConflictPolicy    string `json:"conflict_policy,omitempty" jsonschema:"FAIL, OVERWRITE or SKIP_IF_EXISTS"`
	ExpectedSHA256    string `json:"expected_sha256,omitempty"`
	IncludePrerelease bool   `json:"include_prerelease,omitempty"`
}

var catalogSourcesList = Define(Tool{
	Name:        "vaultclaw_catalog_sources_list",
	Description: "List remote cookbook sources.",
	Toolset:     ToolsetRemote,
	Capability:  CapCatalogView,
	Effect:      ReadsLocal,
	Needs:       NeedRemote,
	Output:      obj("sources", objs()),
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
	Description: "Add or replace a remote cookbook source.",
	Toolset:     ToolsetRemote,
	Capability:  CapRemoteInstall,
	Effect:      ReplacesLocal,
	Needs:       NeedRemote,
	Output:      obj("source", obj()),
}, nil, upsertCatalogSource)

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
	Description: "Remove a remote cookbook source; installed cookbooks stay.",
	Toolset:     ToolsetRemote,
	Capability:  CapRemoteInstall,
	Effect:      DeletesLocal,
	Needs:       NeedRemote,
	Output:      obj("deleted", boolean()),
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
	Description: "List a remote source's cookbooks, before installing one.",
	Toolset:     ToolsetRemote,
	Capability:  CapCatalogView,
	Effect:      ReadsRemote,
	Needs:       NeedRemote,
	Output:      obj("items", objs()),
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
	Description: "Download, verify and store a cookbook from a remote source.",
	Toolset:     ToolsetRemote,
	Capability:  CapRemoteInstall,
	Effect:      InstallsRemote,
	Needs:       NeedRemote,
	Output:      obj("install", obj()),
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
