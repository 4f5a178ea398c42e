package tools

import (
	"context"
	"net/url"
	"regexp"
	"strings"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset vault: connectors, documents, slot bindings and unbounded
// profiles (this file), execution (vault_jobs.go) and the passport
// workflow (vault_passport.go). Arguments are validated before the session
// is resolved, so a malformed call never needs a session; Vault-backed
// results carry the Vault call's request id and status in meta.

type connectorIDIn struct {
	ConnectorID string `json:"connector_id" jsonschema:"connector id, e.g. generic.http, google, identity"`
}

type executeRequestIn struct {
	Request map[string]any `json:"request" jsonschema:"execute request {connector_id, verb, policy_version?, request, module_hash?, query_ast_v1?}"`
}

// idempotencyKeyDoc describes the optional key of every tool that acts.
const idempotencyKeyDoc = "optional key (1-128 of A-Z a-z 0-9 . _ : -) naming this action: Vault runs an action at most once per key, " +
	"so a retry with the same key (after MCP_NETWORK_ERROR with outcome_unknown) returns the first result instead of acting twice; a fresh one is used when omitted"

type executeIn struct {
	Request        map[string]any `json:"request" jsonschema:"execute request {connector_id, verb, policy_version?, request, module_hash?, query_ast_v1?}"`
	IdempotencyKey string         `json:"idempotency_key,omitempty" jsonschema:"optional key naming this action; see the tool description"`
}

var idempotencyKeyRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// idempotencyKey checks an agent's key ("" when not given).
func idempotencyKey(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v != "" && !idempotencyKeyRe.MatchString(v) {
		return "", apperr.Validation("idempotency_key", "idempotency_key must be 1 to 128 characters of letters, digits and . _ : - starting with a letter or digit")
	}
	return v, nil
}

// keyDoc documents idempotency_key in a tool's schema.
func keyDoc(s *jsonschema.Schema) { Prop(s, "idempotency_key").Description = idempotencyKeyDoc }

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
	ConnectorID    string `json:"connector_id" jsonschema:"connector id"`
	Verb           string `json:"verb" jsonschema:"verb defining the slot"`
	Slot           string `json:"slot" jsonschema:"slot name"`
	SecretID       string `json:"secret_id" jsonschema:"id of the secret to bind (never the secret value)"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"optional key naming this action"`
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
	Profile        map[string]any `json:"profile" jsonschema:"connector.unbounded.profile.v1 object, forwarded unchanged"`
	IdempotencyKey string         `json:"idempotency_key,omitempty" jsonschema:"optional key naming this action"`
}

// Hints of Vault tools that change Vault state.
var (
	hintsExecute = Hints{Destructive: true, OpenWorld: true}
	hintsUpsert  = Hints{Destructive: true, Idempotent: true, OpenWorld: true}
)

// needsVault are the services of the pass-through tools.
const needsVault = NeedSessions | NeedVault

// forward resolves the scope's session, makes one Vault call and passes its
// body through with the correlation meta.
func forward(ctx context.Context, d *Deps, c *Call, call func(s session.Session) (*vault.Response, error)) (Result, error) {
	s, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	resp, err := call(s)
	if err != nil {
		return Result{}, err
	}
	return Result{Data: object(resp.Object()), Meta: vaultMeta(resp.RequestID, resp.Status)}, nil
}

// object keeps a missing body null in the envelope (a nil map would be a
// typed nil inside Data).
func object(m map[string]any) any {
	if m == nil {
		return nil
	}
	return m
}

func vaultMeta(requestID string, status int) envelope.Meta {
	return envelope.Meta{RequestID: requestID, VaultHTTPStatus: status}
}

var connectorsList = Define(Tool{
	Name: "vaultclaw_connectors_list", Title: "List Vaultclaw connectors",
	Description: "List the connectors Vaultclaw offers (id and policy_hash). Returns Vault's body unchanged.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: needsVault,
}, nil, listConnectors)

func listConnectors(ctx context.Context, d *Deps, c *Call, _ Empty) (Result, error) {
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.ListConnectors(ctx, s)
	})
}

var connectorGet = Define(Tool{
	Name: "vaultclaw_connector_get", Title: "Get a Vaultclaw connector",
	Description: "Get one connector with its policy: policy_hash (the module hash of bounded verbs) and policy.verbs[verb].input_schema_v1.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: needsVault,
}, nil, getConnector)

func getConnector(ctx context.Context, d *Deps, c *Call, in connectorIDIn) (Result, error) {
	id, err := required("connector_id", in.ConnectorID)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.GetConnector(ctx, s, id)
	})
}

var connectorValidate = Define(Tool{
	Name: "vaultclaw_connector_validate", Title: "Validate a connector request",
	Description: "Validate an execute request against the connector policy without running it. Derives and injects module_hash for bounded verbs (Gmail, legacy secret fields) and the default Gmail list query. Returns {validation, request, module_hash}.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: NeedSessions | NeedExecution,
}, nil, validateConnectorRequest)

func validateConnectorRequest(ctx context.Context, d *Deps, c *Call, in executeRequestIn) (Result, error) {
	s, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	out, err := d.Execution.Validate(ctx, s, in.Request)
	if err != nil {
		return Result{}, err
	}
	return Result{Data: out.Data, Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
}

var connectorExecute = Define(Tool{
	Name: "vaultclaw_connector_execute", Title: "Execute a connector request",
	Description: "Run an execute request synchronously: module-hash preflight, then validate (stopping on any validation failure), then execute. Returns Vault's execute body. When Vault requires a human decision the result is MCP_APPROVAL_REQUIRED with a handle for vaultclaw_approval_wait.",
	Toolset:     ToolsetVault, Capability: CapVaultExecute, Hints: hintsExecute, Needs: NeedSessions | NeedExecution,
}, keyDoc, executeConnectorRequest)

func executeConnectorRequest(ctx context.Context, d *Deps, c *Call, in executeIn) (Result, error) {
	key, err := idempotencyKey(in.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	s, err := d.Sessions.Resolve(ctx, c.Scope())
	if err != nil {
		return Result{}, err
	}
	out, err := d.Execution.Execute(ctx, c.Scope(), s, in.Request, key)
	if err != nil {
		return Result{}, err
	}
	return Result{Data: object(out.Data), Meta: vaultMeta(out.RequestID, out.HTTPStatus)}, nil
}

var documentTypesSuggest = Define(Tool{
	Name: "vaultclaw_document_types_suggest", Title: "Suggest document types",
	Description: "Suggest Vaultclaw document types (type_id, score, reasons) for a description such as \"passport\".",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: needsVault,
}, nil, suggestDocumentTypes)

func suggestDocumentTypes(ctx context.Context, d *Deps, c *Call, in docSuggestIn) (Result, error) {
	q, err := required("query", in.Query)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.DocTypesSuggest(ctx, s, q, in.TopK)
	})
}

var documentTypesLatest = Define(Tool{
	Name: "vaultclaw_document_types_latest", Title: "Latest document of a type",
	Description: "Find the latest stored document of a type for a subject (default self). A missing document is MCP_INTERNAL with vault_code DOCUMENT_SLOT_UNRESOLVED: ask the user to upload it.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: needsVault,
}, func(s *jsonschema.Schema) {
	Default(s, "subject_id", "self")
}, latestDocument)

func latestDocument(ctx context.Context, d *Deps, c *Call, in docLatestIn) (Result, error) {
	typeID, err := required("type_id", in.TypeID)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.DocTypesLatest(ctx, s, typeID, in.SubjectID)
	})
}

var slotBindingsList = Define(Tool{
	Name: "vaultclaw_slot_bindings_list", Title: "List secret slot bindings",
	Description: "List which secrets are bound to a connector verb's slots (secret ids only, never values).",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: needsVault,
}, nil, listSlotBindings)

func listSlotBindings(ctx context.Context, d *Deps, c *Call, in slotBindingsIn) (Result, error) {
	connector, err := required("connector_id", in.ConnectorID)
	if err != nil {
		return Result{}, err
	}
	verb, err := required("verb", in.Verb)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.SlotBindings(ctx, s, connector, verb, in.IncludeRevoked)
	})
}

var slotBind = Define(Tool{
	Name: "vaultclaw_slot_bind", Title: "Bind a secret to a slot",
	Description: "Bind an existing Vaultclaw secret (by id) to a connector verb's slot; a different secret already bound to the slot is replaced.",
	Toolset:     ToolsetVault, Capability: CapVaultExecute, Hints: hintsUpsert, Needs: needsVault,
}, keyDoc, bindSlot)

func bindSlot(ctx context.Context, d *Deps, c *Call, in slotBindIn) (Result, error) {
	key, err := idempotencyKey(in.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	body := map[string]any{}
	for _, f := range []struct{ name, val string }{{"connector_id", in.ConnectorID}, {"verb", in.Verb}, {"slot", in.Slot}, {"secret_id", in.SecretID}} {
		val, err := required(f.name, f.val)
		if err != nil {
			return Result{}, err
		}
		body[f.name] = val
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.SlotBind(ctx, s, body, key)
	})
}

var unboundedProfilesList = Define(Tool{
	Name: "vaultclaw_unbounded_profiles_list", Title: "List unbounded profiles",
	Description: "List generic.http unbounded profiles (which secret slots may be attached to which targets), optionally filtered.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: needsVault,
}, nil, listUnboundedProfiles)

func listUnboundedProfiles(ctx context.Context, d *Deps, c *Call, in profilesListIn) (Result, error) {
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
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.ProfilesList(ctx, s, q)
	})
}

var unboundedProfileGet = Define(Tool{
	Name: "vaultclaw_unbounded_profile_get", Title: "Get an unbounded profile",
	Description: "Get one unbounded profile by id.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Hints: ReadRemote, Needs: needsVault,
}, nil, getUnboundedProfile)

func getUnboundedProfile(ctx context.Context, d *Deps, c *Call, in profileGetIn) (Result, error) {
	id, err := required("profile_id", in.ProfileID)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.ProfileGet(ctx, s, id)
	})
}

var unboundedProfileUpsert = Define(Tool{
	Name: "vaultclaw_unbounded_profile_upsert", Title: "Create or replace an unbounded profile",
	Description: "Create or replace a connector.unbounded.profile.v1 object; it is forwarded to Vaultclaw unchanged (Vault validates it). Needs the connectors.unbounded.profiles.write scope.",
	Toolset:     ToolsetVault, Capability: CapVaultExecute, Hints: hintsUpsert, Needs: needsVault,
}, keyDoc, upsertUnboundedProfile)

func upsertUnboundedProfile(ctx context.Context, d *Deps, c *Call, in profileUpsertIn) (Result, error) {
	key, err := idempotencyKey(in.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.ProfileUpsert(ctx, s, in.Profile, key)
	})
}
