package tools

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHintsFollowFromWhatEachToolDoes restates the rules of effectHints
// independently and checks every tool against them, against the capability
// it requires and against the services it calls: a tool declaring the
// wrong effect, or a table row drifting from its reasoning, fails here.
func TestHintsFollowFromWhatEachToolDoes(t *testing.T) {
	t.Parallel()
	reads := map[Effect]bool{ReadsLocal: true, ReadsRemote: true, ChangesView: true}
	repeatsChangeMore := map[Effect]bool{Executes: true, DeletesLatest: true, InstallsRemote: true}
	leavesThisServer := map[Effect]bool{ReadsRemote: true, ReplacesRemote: true, InstallsRemote: true, Executes: true}
	readCaps := map[string]bool{CapVaultRead: true, CapApprovalsView: true, CapCatalogView: true, CapAuditView: true}
	writeCaps := map[string]bool{CapVaultExecute: true, CapCatalogWrite: true, CapRemoteInstall: true}

	for _, d := range Definitions() {
		require.NotZero(t, d.Effect, "%s declares its effect", d.Name)
		want := Hints{
			ReadOnly:    reads[d.Effect],
			Destructive: !reads[d.Effect],
			Idempotent:  !repeatsChangeMore[d.Effect],
			OpenWorld:   leavesThisServer[d.Effect],
		}
		assert.Equal(t, want, d.Hints, "%s: hints of effect %d", d.Name, d.Effect)
		if readCaps[d.Capability] {
			assert.True(t, d.Hints.ReadOnly, "%s needs read capability %s, so it must be read-only", d.Name, d.Capability)
		}
		if writeCaps[d.Capability] {
			assert.True(t, d.Hints.Destructive, "%s needs write capability %s, so it must be destructive", d.Name, d.Capability)
		}
		if d.Needs&(NeedVault|NeedExecution|NeedPassport) != 0 {
			assert.True(t, d.Hints.OpenWorld, "%s calls Vaultclaw, so it is open world", d.Name)
		}
		if d.Needs == NeedCatalog || d.Needs == NeedHandles || d.Needs == NeedAudit || d.Needs == NeedRouter {
			assert.False(t, d.Hints.OpenWorld, "%s touches only local state", d.Name)
		}
	}

	// The tools whose hints disagreed before: each runs connector verbs
	// (mail, HTTP, trash) or replaces a whole record.
	for _, name := range []string{
		"vaultclaw_connector_execute", "vaultclaw_connector_execute_job", "vaultclaw_plan_execute",
		"vaultclaw_passport_email_workflow", "vaultclaw_catalog_source_upsert", "vaultclaw_session_configure",
		"vaultclaw_unbounded_profile_resolve",
	} {
		d := definition(t, name)
		assert.True(t, d.Hints.Destructive, "%s is destructive", name)
		assert.False(t, d.Hints.ReadOnly, "%s is not read-only", name)
	}
	for _, name := range []string{"vaultclaw_connector_execute", "vaultclaw_connector_execute_job", "vaultclaw_plan_execute", "vaultclaw_passport_email_workflow"} {
		assert.Equal(t, definition(t, name).Hints, definition(t, "vaultclaw_connector_execute").Hints, "%s runs the same verbs as connector_execute", name)
	}
}

func definition(t *testing.T, name string) Tool {
	t.Helper()
	for _, d := range Definitions() {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no tool %s", name)
	return Tool{}
}
