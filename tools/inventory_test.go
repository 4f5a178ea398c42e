package tools

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every definition is complete and listable without services, and its
// named handler lives in the file of its toolset (<toolset>.go or
// <toolset>_*.go), so a tool's file says which toolset grants it.
func TestDefinitionsLiveInTheFileOfTheirToolset(t *testing.T) {
	t.Parallel()
	defs := Definitions()
	require.Len(t, defs, len(inventory))
	names := map[string]bool{}
	for _, d := range defs {
		require.NoError(t, checkDefinition(d))
		require.False(t, names[d.Name], "%s defined twice", d.Name)
		names[d.Name] = true
		assert.Nil(t, d.deps, "%s: definitions are not bound", d.Name)
		if d.Toolset != ToolsetDynamic && !d.Gateway { // the discovery and gateway tools act on the call, no service
			assert.NotZero(t, d.Needs, "%s declares the services it needs", d.Name)
		}
		fn := runtime.FuncForPC(d.handler)
		require.NotNil(t, fn, d.Name)
		assert.NotContains(t, fn.Name(), ".func", "%s: the handler is a named function", d.Name)
		file, _ := fn.FileLine(d.handler)
		base := strings.TrimSuffix(filepath.Base(file), ".go")
		assert.True(t, base == d.Toolset || strings.HasPrefix(base, d.Toolset+"_"),
			"%s (toolset %s) is handled in %s.go", d.Name, d.Toolset, base)
	}
}

func TestAllFailsLoudlyOnAMissingService(t *testing.T) {
	t.Parallel()
	_, err := All(Deps{})
	require.Error(t, err)
	for _, dep := range []string{"Sessions", "Vault", "Catalog", "Remote", "Execution", "Handles", "Router", "Passport", "Audit"} {
		assert.Contains(t, err.Error(), "Deps."+dep+" is nil", dep)
	}
	assert.Contains(t, err.Error(), "vaultclaw_route_resolve")

	// A subset needs only its own services.
	_, err = Select(Deps{}, InToolsets(ToolsetRouting))
	require.Error(t, err)
	assert.Equal(t, "tools: missing 1 dependency: Deps.Router is nil (needed by vaultclaw_route_resolve)", err.Error())
	reg, err := Select(Deps{}, func(Tool) bool { return false })
	require.NoError(t, err)
	assert.Empty(t, reg.Tools())
}

// A bound tool sees only the services it declares.
func TestBoundToolsSeeOnlyWhatTheyNeed(t *testing.T) {
	t.Parallel()
	d := Deps{Audit: fakeLister{}}
	reg, err := Select(d, InToolsets(ToolsetAudit))
	require.NoError(t, err)
	tool, ok := reg.Lookup("vaultclaw_audit_receipts_list")
	require.True(t, ok)
	assert.Equal(t, NeedAudit, tool.deps.present())
	assert.Equal(t, "Deps.Sessions, Deps.Audit", (NeedSessions | NeedAudit).String())
}

type fakeLister struct{}

func (fakeLister) ListReceipts(AuditQuery) ([]any, error) { return nil, nil }

func (fakeLister) ProveReceipt(ReceiptQuery) (any, error) { return nil, ErrReceiptNotFound }

// Every server built lists the input schema encoded once per process: the
// bytes are the schema's encoding, each time.
func TestListedInputSchemaIsTheSchemasEncoding(t *testing.T) {
	t.Parallel()
	for _, tool := range Inventory() {
		want, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		for range 2 {
			got, ok := tool.MCPTool().InputSchema.(json.RawMessage)
			require.True(t, ok, tool.Name)
			require.Equal(t, string(want), string(got), tool.Name)
		}
	}
}
