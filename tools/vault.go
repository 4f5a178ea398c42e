package tools

import (
	"context"
	"fmt"
	"github.com/accordsai/accords-mcp/domain/approval/execution"
	"net/url"
	"strings"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/google/jsonschema-go/jsonschema"
)

// Connector, document and prerequisite tools (spec §8.3). Arguments are
// validated before the session is resolved (§8.2); Vault-backed results
// carry the Vault call's request id and status in meta.

type connectorIDIn struct {
	ConnectorID string `json:"connector_id" jsonschema:"connector id, e.g. generic.http, google, identity"`
}

type executeRequestIn struct {
	Request map[string]any `json:"request" jsonschema:"execute request {connector_id, verb, policy_version?, request, module_hash?, query_ast_v1?}"`
}

type docSuggestIn struct {
	Query string `json:"query" jsonschema:"what the document is, in words (e.g. passport)"`
	TopK  int    `json:"top_k,omitempty" jsonschema:"number of suggestions; default 5 (also for 0 or less)"`
}

type docLatestIn struct {
	TypeID    string `json:"type_id" jsonschema:"document type id, e.g. identity.passport"`
	SubjectID string `json:"subject_id,omitempty" jsonschema:"whose document; default self"`
}

type slotBindingsIn struct {
	ConnectorID    string `json:"connector_id" jsonschema:"connector id"`
	Verb           string `json:"verb" jsonschema:"verb whose slot bindings to list"`
	IncludeRevoked bool   `json:"include_revoked,omitempty" jsonschema:"also list revoked bindings; default false"`
}

type slotBindIn struct {
	ConnectorID string `json:"connector_id" jsonschema:"connector id"`
	Verb        string `json:"verb" jsonschema:"verb defining the slot"`
	Slot        string `json:"slot" jsonschema:"slot name"`
	SecretID    string `json:"secret_id" jsonschema:"id of the secret to bind (never the secret value)"`
}

type profilesListIn struct {
	ConnectorID    string `json:"connector_id,omitempty" jsonschema:"filter by connector id"`
	Verb           string `json:"verb,omitempty" jsonschema:"filter by verb"`
	IncludeRevoked bool   `json:"include_revoked,omitempty" jsonschema:"also list revoked profiles; default false"`
}

type profileGetIn struct {
	ProfileID string `json:"profile_id" jsonschema:"unbounded profile id"`
}

type profileUpsertIn struct {
	Profile map[string]any `json:"profile" jsonschema:"connector.unbounded.profile.v1 object, forwarded unchanged"`
}

// Hints of Vault tools that change Vault state.
var (
	hintsExecute = Hints{Destructive: true, OpenWorld: true}
	hintsUpsert  = Hints{Destructive: true, Idempotent: true, OpenWorld: true}
)

type vaultDeps struct {
	sessions *session.Service
	client   *vault.Client
	hash     *vault.ModuleHash
	// exec turns approval errors into stored handoffs (approval package).
	exec *execution.Service
}

func (v vaultDeps) session(ctx context.Context, c *Call) (session.Session, error) {
	if v.sessions == nil || v.client == nil {
		return session.Session{}, apperr.Internal("vault tools", fmt.Errorf("vault client not configured"))
	}
	return v.sessions.Resolve(ctx, c.Scope())
}

// forward resolves the scope's session, makes one Vault call and passes its
// body through with the correlation meta.
func (v vaultDeps) forward(ctx context.Context, c *Call, call func(s session.Session) (*vault.Response, error)) (Result, error) {
	s, err := v.session(ctx, c)
	if err != nil {
		return Result{}, err
	}
	resp, err := call(s)
	if err != nil {
		return Result{}, err
	}
	return vaultResult(resp), nil
}

// required trims a required string argument; blank is a validation error.
func required(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", apperr.Validation(field, "%s is required", field)
	}
	return v, nil
}

// vaultResult passes a Vault body through with its correlation meta.
func vaultResult(resp *vault.Response) Result {
	var data any
	if m := resp.Object(); m != nil {
		data = m
	}
	return Result{Data: data, Meta: envelope.Meta{RequestID: resp.RequestID, VaultHTTPStatus: resp.Status}}
}

// cloneJSON deep-copies a decoded JSON object so preflight rewrites never
// touch the caller's arguments.
func cloneJSON(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneJSON(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

func vaultTools(d Deps) []Tool {
	v := vaultDeps{sessions: d.Sessions, client: d.Vault, hash: d.ModuleHash, exec: d.Execution}
	if v.hash == nil && v.client != nil {
		v.hash = vault.NewModuleHash(v.client, nil)
	}
	return []Tool{
		Typed(Tool{
			Name: "vaultclaw_connectors_list", Title: "List Vaultclaw connectors",
			Description: "List the connectors Vaultclaw offers (id and policy_hash). Returns Vault's body unchanged.",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, _ Empty) (Result, error) {
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.ListConnectors(ctx, s)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_connector_get", Title: "Get a Vaultclaw connector",
			Description: "Get one connector with its policy: policy_hash (the module hash of bounded verbs) and policy.verbs[verb].input_schema_v1.",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in connectorIDIn) (Result, error) {
			id, err := required("connector_id", in.ConnectorID)
			if err != nil {
				return Result{}, err
			}
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.GetConnector(ctx, s, id)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_connector_validate", Title: "Validate a connector request",
			Description: "Validate an execute request against the connector policy without running it. Derives and injects module_hash for bounded verbs (Gmail, legacy secret fields) and the default Gmail list query. Returns {validation, request, module_hash}.",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in executeRequestIn) (Result, error) {
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			req := cloneJSON(in.Request)
			var resp *vault.Response
			mh, err := v.hash.Run(ctx, s, req, func(ctx context.Context, req map[string]any) error {
				var err error
				resp, err = v.client.Validate(ctx, s, req)
				return err
			})
			if err != nil {
				return Result{}, err
			}
			res := vaultResult(resp)
			res.Data = map[string]any{"validation": res.Data, "request": req, "module_hash": mh}
			return res, nil
		}),
		Typed(Tool{
			Name: "vaultclaw_connector_execute", Title: "Execute a connector request",
			Description: "Run an execute request synchronously: module-hash preflight, then validate (stopping on any validation failure), then execute. Returns Vault's execute body. When Vault requires a human decision the result is MCP_APPROVAL_REQUIRED with a handle for vaultclaw_approval_wait.",
			Toolset:     ToolsetVault, Capability: CapVaultExecute, Hints: hintsExecute,
		}, nil, func(ctx context.Context, c *Call, in executeRequestIn) (Result, error) {
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			req := cloneJSON(in.Request)
			var resp *vault.Response
			_, err = v.hash.Run(ctx, s, req, func(ctx context.Context, req map[string]any) error {
				if _, err := v.client.Validate(ctx, s, req); err != nil {
					return err
				}
				var err error
				resp, err = v.client.Execute(ctx, s, req)
				return err
			})
			if err != nil {
				// The approval package turns a pending-approval error into a
				// handoff and stores its durable handle (D3, D4).
				return Result{}, v.exec.HandoffFromError(ctx, c.Scope(), s, err, "vaultclaw_connector_execute")
			}
			return vaultResult(resp), nil
		}),
		Typed(Tool{
			Name: "vaultclaw_document_types_suggest", Title: "Suggest document types",
			Description: "Suggest Vaultclaw document types (type_id, score, reasons) for a description such as \"passport\".",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in docSuggestIn) (Result, error) {
			q, err := required("query", in.Query)
			if err != nil {
				return Result{}, err
			}
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.DocTypesSuggest(ctx, s, q, in.TopK)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_document_types_latest", Title: "Latest document of a type",
			Description: "Find the latest stored document of a type for a subject (default self). A missing document is MCP_INTERNAL with vault_code DOCUMENT_SLOT_UNRESOLVED: ask the user to upload it.",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, func(s *jsonschema.Schema) {
			Default(s, "subject_id", "self")
		}, func(ctx context.Context, c *Call, in docLatestIn) (Result, error) {
			typeID, err := required("type_id", in.TypeID)
			if err != nil {
				return Result{}, err
			}
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.DocTypesLatest(ctx, s, typeID, in.SubjectID)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_slot_bindings_list", Title: "List secret slot bindings",
			Description: "List which secrets are bound to a connector verb's slots (secret ids only, never values).",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in slotBindingsIn) (Result, error) {
			connector, err := required("connector_id", in.ConnectorID)
			if err != nil {
				return Result{}, err
			}
			verb, err := required("verb", in.Verb)
			if err != nil {
				return Result{}, err
			}
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.SlotBindings(ctx, s, connector, verb, in.IncludeRevoked)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_slot_bind", Title: "Bind a secret to a slot",
			Description: "Bind an existing Vaultclaw secret (by id) to a connector verb's slot; a different secret already bound to the slot is replaced.",
			Toolset:     ToolsetVault, Capability: CapVaultExecute, Hints: hintsUpsert,
		}, nil, func(ctx context.Context, c *Call, in slotBindIn) (Result, error) {
			body := map[string]any{}
			for _, f := range []struct{ name, val string }{{"connector_id", in.ConnectorID}, {"verb", in.Verb}, {"slot", in.Slot}, {"secret_id", in.SecretID}} {
				val, err := required(f.name, f.val)
				if err != nil {
					return Result{}, err
				}
				body[f.name] = val
			}
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.SlotBind(ctx, s, body)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_unbounded_profiles_list", Title: "List unbounded profiles",
			Description: "List generic.http unbounded profiles (which secret slots may be attached to which targets), optionally filtered.",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in profilesListIn) (Result, error) {
			q := url.Values{}
			if x := strings.TrimSpace(in.ConnectorID); x != "" {
				q.Set("connector_id", x)
			}
			if x := strings.TrimSpace(in.Verb); x != "" {
				q.Set("verb", x)
			}
			if in.IncludeRevoked {
				q.Set("include_revoked", "true")
			}
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.ProfilesList(ctx, s, q)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_unbounded_profile_get", Title: "Get an unbounded profile",
			Description: "Get one unbounded profile by id.",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in profileGetIn) (Result, error) {
			id, err := required("profile_id", in.ProfileID)
			if err != nil {
				return Result{}, err
			}
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.ProfileGet(ctx, s, id)
			})
		}),
		Typed(Tool{
			Name: "vaultclaw_unbounded_profile_upsert", Title: "Create or replace an unbounded profile",
			Description: "Create or replace a connector.unbounded.profile.v1 object; it is forwarded to Vaultclaw unchanged (Vault validates it). Needs the connectors.unbounded.profiles.write scope.",
			Toolset:     ToolsetVault, Capability: CapVaultExecute, Hints: hintsUpsert,
		}, nil, func(ctx context.Context, c *Call, in profileUpsertIn) (Result, error) {
			return v.forward(ctx, c, func(s session.Session) (*vault.Response, error) {
				return v.client.ProfileUpsert(ctx, s, in.Profile, "")
			})
		}),
	}
}
