package tools

import (
	"context"
	"fmt"
	"github.com/accordsai/accords-mcp/execution"
	"net/url"
	"strings"

	"github.com/accordsai/accords-mcp/apperr"
	"github.com/accordsai/accords-mcp/envelope"
	"github.com/accordsai/accords-mcp/session"
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
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.ListConnectors(ctx, s)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
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
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.GetConnector(ctx, s, id)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
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
				if v.exec != nil {
					// One handoff implementation (approval package) that also
					// stores the durable handle (D4).
					return Result{}, v.exec.HandoffFromError(ctx, c.Scope(), s, err, "vaultclaw_connector_execute")
				}
				return Result{}, syncApprovalHandoff(ctx, v, s, err)
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
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.DocTypesSuggest(ctx, s, q, in.TopK)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
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
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.DocTypesLatest(ctx, s, typeID, in.SubjectID)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
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
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.SlotBindings(ctx, s, connector, verb, in.IncludeRevoked)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
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
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.SlotBind(ctx, s, body)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
		}),
		Typed(Tool{
			Name: "vaultclaw_unbounded_profiles_list", Title: "List unbounded profiles",
			Description: "List generic.http unbounded profiles (which secret slots may be attached to which targets), optionally filtered.",
			Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote,
		}, nil, func(ctx context.Context, c *Call, in profilesListIn) (Result, error) {
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
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
			resp, err := v.client.ProfilesList(ctx, s, q)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
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
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.ProfileGet(ctx, s, id)
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
		}),
		Typed(Tool{
			Name: "vaultclaw_unbounded_profile_upsert", Title: "Create or replace an unbounded profile",
			Description: "Create or replace a connector.unbounded.profile.v1 object; it is forwarded to Vaultclaw unchanged (Vault validates it). Needs the connectors.unbounded.profiles.write scope.",
			Toolset:     ToolsetVault, Capability: CapVaultExecute, Hints: hintsUpsert,
		}, nil, func(ctx context.Context, c *Call, in profileUpsertIn) (Result, error) {
			s, err := v.session(ctx, c)
			if err != nil {
				return Result{}, err
			}
			resp, err := v.client.ProfileUpsert(ctx, s, in.Profile, "")
			if err != nil {
				return Result{}, err
			}
			return vaultResult(resp), nil
		}),
	}
}

// syncApprovalHandoff adds an approval handle (spec §4.4 shape) to a
// synchronous execute error that carries pending-approval details (D3).
// The pending-id lookup is best effort: any failure leaves it unresolved.
func syncApprovalHandoff(ctx context.Context, v vaultDeps, s session.Session, err error) error {
	ae := apperr.As(err)
	if ae.Code != apperr.CodeApprovalRequired {
		return err
	}
	vd := vault.ErrorVaultDetails(err)
	pa, _ := vd["pending_approval"].(map[string]any)
	if len(pa) == 0 {
		return err
	}
	str := func(m map[string]any, k string) string { x, _ := m[k].(string); return strings.TrimSpace(x) }
	challenge := ""
	if ch, ok := pa["challenge"].(map[string]any); ok {
		challenge = str(ch, "challenge_id")
	}
	jobID := str(vd, "job_id")
	if jobID == "" {
		jobID = str(pa, "job_id")
	}
	pendingID := str(pa, "pending_id")
	if pendingID == "" && challenge != "" && jobID != "" {
		if resp, lerr := v.client.PendingApprovals(ctx, s, vault.PendingQuery(challenge, 200)); lerr == nil {
			pendingID = newestPendingID(resp.Object(), jobID)
		}
	}
	var expires int64
	for _, src := range []any{vd["pending_expires_at_unix_ms"], pa["expires_at_unix_ms"]} {
		if f, ok := src.(float64); ok && expires == 0 {
			expires = int64(f)
		}
	}
	handle := map[string]any{"kind": "JOB", "job_id": jobID, "run_id": "", "challenge_id": challenge, "pending_id": pendingID}
	approval := map[string]any{
		"status": "PENDING_APPROVAL", "kind": "JOB", "job_id": jobID, "run_id": "", "challenge_id": challenge, "pending_id": pendingID,
		"pending_id_resolved": pendingID != "", "pending_expires_at_unix_ms": expires, "pending_approval": pa,
		"decision_outcome": "PENDING",
		"next_action":      map[string]any{"tool": "vaultclaw_approval_wait", "arguments": map[string]any{"handle": handle}},
	}
	if u := str(pa, "remote_attestation_url"); u != "" {
		approval["remote_attestation_url"] = u
		approval["remote_attestation_link_markdown"] = "[" + u + "](" + u + ")"
	}
	ae.Details["approval"] = approval
	return ae
}

// newestPendingID picks the newest row of job (created_seq desc, then
// pending_id asc), as §4.3 does.
func newestPendingID(body map[string]any, jobID string) string {
	items, _ := body["items"].([]any)
	best, bestSeq := "", int64(-1)
	for _, it := range items {
		row, ok := it.(map[string]any)
		if !ok {
			continue
		}
		if j, _ := row["job_id"].(string); !strings.EqualFold(strings.TrimSpace(j), jobID) {
			continue
		}
		id, _ := row["pending_id"].(string)
		var seq int64
		if f, ok := row["created_seq"].(float64); ok {
			seq = int64(f)
		}
		if seq > bestSeq || (seq == bestSeq && id < best) {
			best, bestSeq = id, seq
		}
	}
	return strings.TrimSpace(best)
}
