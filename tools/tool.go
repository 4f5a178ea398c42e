// Package tools is the MCP-facing layer. Every tool is a static definition
// (name, description, input schema, annotations, toolset, capability, the
// services it needs) with a named handler, in the file of its toolset;
// inventory.go lists them all. Arguments are decoded once into the tool's
// argument struct; handlers are thin and call domain packages that know
// nothing of MCP. Results and errors become the envelope in exactly one
// place (adapter.go), which also reports the call's typed Outcome.
package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"

	"github.com/accordsai/accords-mcp/platform/envelope"
	"github.com/google/jsonschema-go/jsonschema"
)

// Hints are the four MCP annotation hints. Every tool sets all four.
type Hints struct {
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	OpenWorld   bool
}

// Effect is what a tool does to the world. A tool declares its effect and
// its hints follow from effectHints, so tools doing the same kind of thing
// can never disagree (a client that asks before destructive calls asks on
// every path that sends mail, not on one of them).
type Effect int

// Effects, from harmless to irreversible.
const (
	// ReadsLocal reads this server's own state (catalog, handles, receipts).
	ReadsLocal Effect = iota + 1
	// ReadsRemote reads from Vaultclaw or a remote catalog source.
	ReadsRemote
	// ChangesView changes only which tools the calling session is shown.
	ChangesView
	// ReplacesLocal stores a whole local record (session, bundle, source),
	// replacing any record under the same key: no merge.
	ReplacesLocal
	// DeletesLocal removes a named local record.
	DeletesLocal
	// DeletesLatest removes the latest version when no version is named.
	DeletesLatest
	// ReplacesRemote writes a Vaultclaw record (slot binding, unbounded
	// profile), replacing any under the same key.
	ReplacesRemote
	// InstallsRemote downloads a bundle from a remote source and stores it,
	// replacing a stored one under OVERWRITE.
	InstallsRemote
	// Executes runs connector verbs through Vaultclaw: sends mail, calls
	// HTTP APIs, trashes messages. The effect leaves this system.
	Executes
)

// effectHints is the one table of annotation hints. The reasoning, column
// by column:
//   - readOnly: only reads and the session view change nothing anyone else
//     sees; read-only mode keeps exactly these tools.
//   - destructive: everything else. Replacing a record loses the old one,
//     deleting loses it outright, and executing acts outside this system
//     where nothing can be undone; "additive only" holds for none of them.
//   - idempotent: a repeat with the same arguments changes nothing more.
//     False where it does: executing sends again, deleting the latest
//     version deletes the next one, and installing without a version picks
//     whatever release the source publishes by then.
//   - openWorld: the tool talks to Vaultclaw or a remote source, whose
//     state this server does not own.
var effectHints = map[Effect]Hints{
	ReadsLocal:     {ReadOnly: true, Idempotent: true},
	ReadsRemote:    {ReadOnly: true, Idempotent: true, OpenWorld: true},
	ChangesView:    {ReadOnly: true, Idempotent: true},
	ReplacesLocal:  {Destructive: true, Idempotent: true},
	DeletesLocal:   {Destructive: true, Idempotent: true},
	DeletesLatest:  {Destructive: true},
	ReplacesRemote: {Destructive: true, Idempotent: true, OpenWorld: true},
	InstallsRemote: {Destructive: true, OpenWorld: true},
	Executes:       {Destructive: true, OpenWorld: true},
}

// Common hint sets, for tests that define tools of their own.
var (
	// ReadLocal reads local state only.
	ReadLocal = effectHints[ReadsLocal]
	// ReadRemote reads from Vaultclaw or a remote source.
	ReadRemote = effectHints[ReadsRemote]
)

// Toolsets group tools for --toolsets filtering. A tool's toolset is a
// security control (operators enable toolsets), so moving a tool between
// toolsets is a visible change: the tool snapshots record it.
const (
	ToolsetSession   = "session"
	ToolsetVault     = "vault"
	ToolsetApprovals = "approvals"
	ToolsetCatalog   = "catalog"
	ToolsetRemote    = "remote"
	ToolsetRouting   = "routing"
	ToolsetAudit     = "audit"
	// ToolsetDynamic holds the discovery tools; it exists only with
	// dynamic toolsets on and cannot be selected with --toolsets.
	ToolsetDynamic = "dynamic"
)

// SelectableToolsets are the toolsets --toolsets and
// vaultclaw_toolset_enable name.
var SelectableToolsets = []string{ToolsetSession, ToolsetVault, ToolsetApprovals, ToolsetCatalog, ToolsetRemote, ToolsetRouting, ToolsetAudit}

// Capabilities a caller may hold (gateway policy).
const (
	CapSessionAdmin  = "session_admin"
	CapVaultRead     = "vault_read"
	CapVaultExecute  = "vault_execute"
	CapApprovalsView = "approvals_view"
	CapCatalogView   = "catalog_view"
	CapCatalogWrite  = "catalog_write"
	CapRemoteInstall = "remote_install"
	CapAuditView     = "audit_view"
	// CapToolDiscovery is held by every caller: the discovery tools show a
	// session only tools it may call anyway, and change no data.
	CapToolDiscovery = "tool_discovery"
)

// SharedCapabilities are the capabilities whose tools change state every
// tenant shares: the one catalog (cookbooks, remote sources, installs)
// that every tenant searches, renders and executes from (D24). "*" grants
// them to the local stdio caller, the operator, and to anonymous loopback
// callers, whose tenant is a header any local process may send; an
// authenticated HTTP caller holds one only when its policy entry names it.
var SharedCapabilities = []string{CapCatalogWrite, CapRemoteInstall}

// Tool is one tool. Definitions are package-level values built by Define;
// they need no services, so they can be listed (Definitions) for snapshots
// and docs. A Registry holds copies bound to the services of Deps.
type Tool struct {
	Name        string
	Description string
	Toolset     string
	Capability  string
	// Effect decides Hints (effectHints); Define fills them in.
	Effect Effect
	Hints  Hints
	// Needs are the services the handler reads from Deps.
	Needs Needs
	// Renders: the handler builds the request it sends to Vault and hands
	// it to the gateway's rendered check (RenderedCheck) before sending.
	Renders bool
	// InputSchema is inferred by Define from the argument type.
	InputSchema *jsonschema.Schema
	// Unlisted are top-level arguments the tool accepts and checks but does
	// not list in its input schema: the predecessor's aliases and its
	// undocumented pass-throughs. Old clients keep sending them; new ones
	// are not invited to.
	Unlisted []string
	// Narrowed are top-level arguments listed in a narrower form than the
	// one accepted: the portable form new clients should send (plan_input
	// as an object, tags as an array), while the predecessor's looser forms
	// (any JSON value, a CSV string) keep working.
	Narrowed map[string]*jsonschema.Schema
	// Output is the schema of the envelope's data on success: the tool's
	// real fields, briefly. MCPTool wraps it in the envelope.
	Output *jsonschema.Schema
	// Sensitive are argument and result field names logged receipts
	// always redact, besides those that look secret (audit.Redact).
	Sensitive []string
	// Gateway: the handler acts through the gateway's view of the call
	// (GatewayControl), which the gateway puts in its context.
	Gateway bool

	// inputJSON is InputSchema encoded, once (set by Define).
	inputJSON func() json.RawMessage
	// args validates the arguments against the whole argument schema
	// (listed and unlisted) and applies its defaults.
	args *argSchema
	// handle decodes the call's prepared arguments and runs the handler.
	handle func(ctx context.Context, d *Deps, c *Call, args []byte) (Result, error)
	// handler is the named handler function (its source file is checked
	// against the toolset by a test).
	handler uintptr
	// deps are the services the handler sees; nil until bound.
	deps *Deps
}

// Writes reports whether the tool changes state anywhere (the read-only
// mode removes such tools).
func (t Tool) Writes() bool { return !t.Hints.ReadOnly }

// Handler runs one tool with its decoded arguments. d holds exactly the
// services the tool's Needs name.
type Handler[In any] func(ctx context.Context, d *Deps, c *Call, in In) (Result, error)

// Result is a successful tool outcome.
type Result struct {
	Data any
	Meta envelope.Meta
}

// OK wraps data with default meta.
func OK(data any) (Result, error) { return Result{Data: data}, nil }

// Define builds a tool whose arguments decode into In. The input schema is
// inferred from In (json tags; fields without omitempty are required;
// jsonschema tags are descriptions; StringList and AnyValue fields take
// their loose forms); adjust lets a tool add enums, bounds and defaults,
// which every call then gets (nested objects included).
func Define[In any](t Tool, adjust func(s *jsonschema.Schema), h Handler[In]) Tool {
	s, err := jsonschema.For[In](&jsonschema.ForOptions{TypeSchemas: argTypes})
	if err != nil {
		panic(fmt.Sprintf("tool %s: infer schema: %v", t.Name, err))
	}
	normalizeSchema(s)
	if adjust != nil {
		adjust(s)
	}
	if t.Effect != 0 {
		t.Hints = effectHints[t.Effect]
	}
	t.InputSchema = listed(s, t.Unlisted, t.Narrowed)
	// Encoded once per process: every server built (one per attached
	// client, the stdio server, the HTTP bridge's) lists the same bytes.
	name, listedSchema := t.Name, t.InputSchema
	t.inputJSON = sync.OnceValue(func() json.RawMessage { return encodeInputSchema(name, listedSchema) })
	t.args = newArgSchema(t.Name, s)
	t.handle = func(ctx context.Context, d *Deps, c *Call, args []byte) (Result, error) {
		var in In
		if err := decodeArgs(args, &in); err != nil {
			return Result{}, err
		}
		return h(ctx, d, c, in)
	}
	t.handler = reflect.ValueOf(h).Pointer()
	return t
}

// listed is s as clients see it: without the unlisted top-level
// properties, and with the narrowed ones in their narrower form.
func listed(s *jsonschema.Schema, unlisted []string, narrowed map[string]*jsonschema.Schema) *jsonschema.Schema {
	if len(unlisted) == 0 && len(narrowed) == 0 {
		return s
	}
	for _, name := range unlisted {
		if _, ok := s.Properties[name]; !ok || slices.Contains(s.Required, name) {
			panic("unlisted argument " + name + " is not an optional property")
		}
	}
	out := *s
	out.Properties = map[string]*jsonschema.Schema{}
	for name, p := range s.Properties {
		if slices.Contains(unlisted, name) {
			continue
		}
		if n, ok := narrowed[name]; ok {
			nc := *n
			if nc.Description == "" {
				nc.Description = p.Description
			}
			p = &nc
		}
		out.Properties[name] = p
	}
	for name := range narrowed {
		if _, ok := s.Properties[name]; !ok {
			panic("narrowed argument " + name + " is not a property")
		}
	}
	return &out
}

// Empty is the argument type of tools without arguments.
type Empty struct{}

// normalizeSchema makes inferred schemas portable to every client: one type
// per node (any-typed values as anyOf of the six types) (the inference writes ["null", T] for pointers and slices; null
// is accepted anyway, since an explicit null for an optional argument reads
// as absent), no schema for the values of free-form objects (the inference
// writes an empty one, which marshals as the boolean schema true that some
// clients refuse), and no additionalProperties false, because unknown
// arguments are accepted and reported in meta.warnings (D21).
func normalizeSchema(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if reflect.ValueOf(*s).IsZero() {
		// An any-typed argument: say so in a form every client reads.
		s.AnyOf = anyValue().AnyOf
		return
	}
	if s.Type == "" && len(s.Types) == 2 && slices.Contains(s.Types, "null") {
		other := s.Types[0]
		if other == "null" {
			other = s.Types[1]
		}
		s.Type, s.Types = other, nil
	}
	if s.AdditionalProperties != nil && (s.AdditionalProperties.Not != nil || reflect.ValueOf(*s.AdditionalProperties).IsZero()) {
		s.AdditionalProperties = nil
	}
	for _, p := range s.Properties {
		normalizeSchema(p)
	}
	normalizeSchema(s.Items)
	if s.AdditionalProperties != nil {
		normalizeSchema(s.AdditionalProperties)
	}
}

// Prop returns the named property schema of s (panics when absent: a
// programming error caught by the snapshot tests).
func Prop(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p, ok := s.Properties[name]
	if !ok {
		panic("schema has no property " + name)
	}
	return p
}

// Enum restricts a string property to values.
func Enum(s *jsonschema.Schema, name string, values ...string) {
	p := Prop(s, name)
	p.Enum = nil
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
}

// Default sets a property's default, applied before the handler runs.
func Default(s *jsonschema.Schema, name string, v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	Prop(s, name).Default = raw
}

// Range bounds a numeric property.
func Range(s *jsonschema.Schema, name string, min, max float64) {
	p := Prop(s, name)
	p.Minimum = &min
	p.Maximum = &max
}

// AnyOf lets a property be one of several schemas (for example a CSV
// string or a string array), as anyOf branches of one type each: clients
// that read "type" as one string refuse the array form.
func AnyOf(s *jsonschema.Schema, name string, branches ...*jsonschema.Schema) {
	p := Prop(s, name)
	p.Type, p.Types, p.Items, p.AnyOf = "", nil, nil, branches
}
