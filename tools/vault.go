package tools

import (
	"context"
	"net/url"
	"strings"

	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/accordsai/accords-mcp/platform/ident"
	"github.com/accordsai/accords-mcp/vault"
	"github.com/google/jsonschema-go/jsonschema"
)

// Toolset vault: connectors, documents, slot bindings and unbounded
// profiles (this file), execution (vault_jobs.go) and the passport
// workflow (vault_passport.go). Arguments are validated before the session
// is resolved, so a malformed call never needs a session; Vault-backed
// results carry the Vault call's request id and status in meta.

type connectorIDIn struct {
	ConnectorID string `json:"connector_id"`
}

type executeRequestIn struct {
	Request map[string]any `json:"request" jsonschema:"{connector_id, verb, request}"`
}

type executeIn struct {
	Request        map[string]any `json:"request" jsonschema:"{connector_id, verb, request}"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
}

var idempotencyKeyRule = ident.New("A-Za-z0-9", "A-Za-z0-9._:-", 128)

// idempotencyKey checks an agent's key ("" when not given).
func idempotencyKey(v string) (string, error) {
	v = strings.TrimSpace(v)
	if v != "" && !idempotencyKeyRule.Valid(v) {
		return "", apperr.Validation("idempotency_key", "idempotency_key must be 1 to 128 characters of letters, digits and . _ : - starting with a letter or digit")
	}
	return v, nil
}

type docSuggestIn struct {
	Query string `json:"query"`
	TopK  int    `json:"top_k,omitempty"`
}

type docLatestIn struct {
	TypeID    string `json:"type_id"`
	SubjectID string `json:"subject_id,omitempty"`
}

type slotBindingsIn struct {
	ConnectorID    string `json:"connector_id"`
	Verb           string `json:"verb"`
	IncludeRevoked bool   `json:"include_revoked,omitempty"`
}

type slotBindIn struct {
	ConnectorID    string `json:"connector_id"`
	Verb           string `json:"verb"`
	Slot           string `json:"slot"`
	SecretID       string `json:"secret_id" jsonschema:"id, not value"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

type profilesListIn struct {
	ConnectorID    string `json:"connector_id,omitempty"`
	Verb           string `json:"verb,omitempty"`
	IncludeRevoked bool   `json:"include_revoked,omitempty"`
}

type profileGetIn struct {
	ProfileID string `json:"profile_id"`
}

type profileUpsertIn struct {
	Profile        map[string]any `json:"profile"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
}

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
	Name:        "vaultclaw_connectors_list",
	Description: "List Vaultclaw's connectors.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: needsVault,
	Output: vaultBody("items", objs()),
}, nil, listConnectors)

func listConnectors(ctx context.Context, d *Deps, c *Call, _ Empty) (Result, error) {
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.ListConnectors(ctx, s.Endpoint())
	})
}

var connectorGet = Define(Tool{
	Name:        "vaultclaw_connector_get",
	Description: "Get a connector and its policy (verbs' input_schema_v1).",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: needsVault,
	Output: vaultBody("policy", obj()),
}, nil, getConnector)

func getConnector(ctx context.Context, d *Deps, c *Call, in connectorIDIn) (Result, error) {
	id, err := required("connector_id", in.ConnectorID)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.GetConnector(ctx, s.Endpoint(), id)
	})
}

var connectorValidate = Define(Tool{
	Name:        "vaultclaw_connector_validate",
	Description: "Check a connector request without running it.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: NeedSessions | NeedExecution,
	Output: obj("validation", obj(), "request", obj()),
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
	Name:        "vaultclaw_connector_execute",
	Description: "Run a connector request now: it may send mail or call APIs.",
	Toolset:     ToolsetVault, Capability: CapVaultExecute, Effect: Executes, Needs: NeedSessions | NeedExecution,
	Output: vaultBody("status", str()),
}, nil, executeConnectorRequest)

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
	Name:        "vaultclaw_document_types_suggest",
	Description: "Suggest document type ids for words such as passport.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: needsVault,
	Output: vaultBody("suggestions", objs()),
}, nil, suggestDocumentTypes)

func suggestDocumentTypes(ctx context.Context, d *Deps, c *Call, in docSuggestIn) (Result, error) {
	q, err := required("query", in.Query)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.DocTypesSuggest(ctx, s.Endpoint(), q, in.TopK)
	})
}

var documentTypesLatest = Define(Tool{
	Name:        "vaultclaw_document_types_latest",
	Description: "Find the latest document of a type, to check an attachment.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: needsVault,
	Output: vaultBody("document_id", str()),
}, func(s *jsonschema.Schema) {
	Default(s, "subject_id", "self")
}, latestDocument)

func latestDocument(ctx context.Context, d *Deps, c *Call, in docLatestIn) (Result, error) {
	typeID, err := required("type_id", in.TypeID)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.DocTypesLatest(ctx, s.Endpoint(), typeID, in.SubjectID)
	})
}

var slotBindingsList = Define(Tool{
	Name:        "vaultclaw_slot_bindings_list",
	Description: "List the secret ids bound to a connector verb's slots.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: needsVault,
	Output: vaultBody("items", objs()),
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
		return d.Vault.SlotBindings(ctx, s.Endpoint(), connector, verb, in.IncludeRevoked)
	})
}

var slotBind = Define(Tool{
	Name:        "vaultclaw_slot_bind",
	Description: "Bind a secret id to a connector verb's slot, replacing the old one.",
	Toolset:     ToolsetVault, Capability: CapVaultExecute, Effect: ReplacesRemote, Needs: needsVault,
	Output: vaultBody("binding", obj()),
}, nil, bindSlot)

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
		return d.Vault.SlotBind(ctx, s.Endpoint(), body, key)
	})
}

var unboundedProfilesList = Define(Tool{
	Name:        "vaultclaw_unbounded_profiles_list",
	Description: "List unbounded profiles: which secrets may go where.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: needsVault,
	Output: vaultBody("items", objs()),
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
		return d.Vault.ProfilesList(ctx, s.Endpoint(), q)
	})
}

var unboundedProfileGet = Define(Tool{
	Name:        "vaultclaw_unbounded_profile_get",
	Description: "Get one unbounded profile.",
	Toolset:     ToolsetVault, Capability: CapVaultRead, Effect: ReadsRemote, Needs: needsVault,
	Output: vaultBody("profile", obj()),
}, nil, getUnboundedProfile)

func getUnboundedProfile(ctx context.Context, d *Deps, c *Call, in profileGetIn) (Result, error) {
	id, err := required("profile_id", in.ProfileID)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.ProfileGet(ctx, s.Endpoint(), id)
	})
}

var unboundedProfileUpsert = Define(Tool{
	Name:        "vaultclaw_unbounded_profile_upsert",
	Description: "Create or replace an unbounded profile.",
	Toolset:     ToolsetVault, Capability: CapVaultExecute, Effect: ReplacesRemote, Needs: needsVault,
	Output: vaultBody("profile", obj()),
}, nil, upsertUnboundedProfile)

func upsertUnboundedProfile(ctx context.Context, d *Deps, c *Call, in profileUpsertIn) (Result, error) {
	key, err := idempotencyKey(in.IdempotencyKey)
	if err != nil {
		return Result{}, err
	}
	return forward(ctx, d, c, func(s session.Session) (*vault.Response, error) {
		return d.Vault.ProfileUpsert(ctx, s.Endpoint(), in.Profile, key)
	})
}
