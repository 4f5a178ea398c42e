package catalog

import (
	"testing"

	"github.com/accordsai/accords-mcp/index"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func builtinSet(title string) []*Bundle {
	a := sample("seed.a", "1.0.0", 2)
	a.Title = title
	return []*Bundle{a, sample("seed.b", "1.0.0", 1)}
}

func TestSeedBuiltins(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()

	rep, err := e.svc.SeedBuiltins(ctx, builtinSet("Original"))
	require.NoError(t, err)
	assert.Equal(t, []string{"seed.a@1.0.0", "seed.b@1.0.0"}, rep.Seeded)
	assert.False(t, rep.Unchanged)
	rev := e.svc.Rev()
	res, err := e.svc.Search(ctx, index.Query{CookbookID: "seed.a"})
	require.NoError(t, err)
	assert.Len(t, res.Items, 2, "seeded bundles are indexed")

	// Same set on the next start: one read, nothing written.
	e.reopen()
	rep, err = e.svc.SeedBuiltins(ctx, builtinSet("Original"))
	require.NoError(t, err)
	assert.True(t, rep.Unchanged)
	assert.Equal(t, rev, e.svc.Rev())

	// Upgrade with new content for an unedited bundle: it is updated.
	rep, err = e.svc.SeedBuiltins(ctx, builtinSet("Updated"))
	require.NoError(t, err)
	assert.Equal(t, []string{"seed.a@1.0.0"}, rep.Updated)
	st, err := e.svc.Get(ctx, "seed.a", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "Updated", st.Bundle.Title)

	// The user edits seed.a and deletes seed.b.
	mine := sample("seed.a", "1.0.0", 2)
	mine.Title = "Mine"
	mustUpsert(t, e.svc, mine, PolicyOverwrite)
	_, err = e.svc.Delete(ctx, "seed.b", "")
	require.NoError(t, err)

	// A later upgrade neither overwrites the edit nor restores the deletion.
	next := builtinSet("Upgraded again")
	next[1].Title = "B changed"
	rep, err = e.svc.SeedBuiltins(ctx, next)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"seed.a@1.0.0", "seed.b@1.0.0"}, rep.Kept)
	assert.Empty(t, rep.Seeded)
	assert.Empty(t, rep.Updated)
	st, err = e.svc.Get(ctx, "seed.a", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "Mine", st.Bundle.Title)
	_, err = e.svc.Get(ctx, "seed.b", "")
	require.Error(t, err)

	// A new built-in version is added beside the user's.
	v2 := sample("seed.a", "1.1.0", 1)
	rep, err = e.svc.SeedBuiltins(ctx, append(next, v2))
	require.NoError(t, err)
	assert.Equal(t, []string{"seed.a@1.1.0"}, rep.Seeded)
	st, err = e.svc.Get(ctx, "seed.a", "")
	require.NoError(t, err)
	assert.Equal(t, "1.1.0", st.Bundle.Version)
}

func TestSeedKeepsPreexistingUserVersion(t *testing.T) {
	e := newEnv(t)
	own := sample("seed.a", "1.0.0", 2)
	own.Title = "User's own"
	mustUpsert(t, e.svc, own, "")
	rep, err := e.svc.SeedBuiltins(t.Context(), builtinSet("Builtin"))
	require.NoError(t, err)
	assert.Equal(t, []string{"seed.a@1.0.0"}, rep.Kept)
	assert.Equal(t, []string{"seed.b@1.0.0"}, rep.Seeded)
	st, err := e.svc.Get(t.Context(), "seed.a", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "User's own", st.Bundle.Title)
	// Later built-in changes still never touch it.
	_, err = e.svc.SeedBuiltins(t.Context(), builtinSet("Builtin 2"))
	require.NoError(t, err)
	st, err = e.svc.Get(t.Context(), "seed.a", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, "User's own", st.Bundle.Title)
}

func TestSeedRejectsInvalidBuiltinWithoutWriting(t *testing.T) {
	e := newEnv(t)
	bad := builtinSet("x")
	bad[1].Title = ""
	_, err := e.svc.SeedBuiltins(t.Context(), bad)
	require.Error(t, err)
	items, err := e.svc.List(t.Context(), ListFilter{})
	require.NoError(t, err)
	assert.Empty(t, items, "no partial seeding")
}
