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

// Common hint sets.
var (
	// ReadLocal reads local state only.
	ReadLocal = Hints{ReadOnly: true, Idempotent: true}
	// ReadRemote reads from Vaultclaw or a remote source.
	ReadRemote = Hints{ReadOnly: true, Idempotent: true, OpenWorld: true}
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
)

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
)

// Tool is one tool. Definitions are package-level values built by Define;
// they need no services, so they can be listed (Definitions) for snapshots
// and docs. A Registry holds copies bound to the services of Deps.
type Tool struct {
	Name        string
	Title       string
	Description string
	Toolset     string
	Capability  string
	Hints       Hints
	// Needs are the services the handler reads from Deps.
	Needs Needs
	// Renders: the handler builds the request it sends to Vault and hands
	// it to the gateway's rendered check (RenderedCheck) before sending.
	Renders bool
	// InputSchema is inferred by Define from the argument type.
	InputSchema *jsonschema.Schema

	// check validates the arguments against InputSchema.
	check *checker
	// handle decodes the call's arguments and runs the handler.
	handle func(ctx context.Context, d *Deps, c *Call) (Result, error)
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
// jsonschema tags are descriptions); adjust lets a tool add enums, bounds
// and defaults, which the decoder then applies (nested objects included).
func Define[In any](t Tool, adjust func(s *jsonschema.Schema), h Handler[In]) Tool {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: infer schema: %v", t.Name, err))
	}
	normalizeSchema(s)
	if adjust != nil {
		adjust(s)
	}
	t.InputSchema = s
	t.check = compileSchema(s)
	dec := newDecoder[In](t.Name, s)
	t.handle = func(ctx context.Context, d *Deps, c *Call) (Result, error) {
		var in In
		if err := dec.decode(c.args, &in); err != nil {
			return Result{}, err
		}
		return h(ctx, d, c, in)
	}
	t.handler = reflect.ValueOf(h).Pointer()
	return t
}

// Empty is the argument type of tools without arguments.
type Empty struct{}

// normalizeSchema makes inferred schemas friendly to every client: no boolean
// schemas (an empty schema marshals as true), and no additionalProperties
// false, because tools accept and ignore unknown arguments as the
// predecessor did.
func normalizeSchema(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if reflect.ValueOf(*s).IsZero() {
		s.Description = "any JSON value"
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Not != nil {
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

// AnyOf lets a property be one of several JSON types (for example a CSV
// string or a string array).
func AnyOf(s *jsonschema.Schema, name string, types ...string) {
	p := Prop(s, name)
	p.Type = ""
	p.Types = types
}
