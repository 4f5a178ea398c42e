package catalog

import (
	"errors"
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

// A start with the source last seeded does not load the set; any other
// source loads it and runs the full seeding, which keeps its rules.
func TestSeedBuiltinsFromSkipsTheSeededSource(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	loads := 0
	loader := func(title string) func() ([]*Bundle, error) {
		return func() ([]*Bundle, error) { loads++; return builtinSet(title), nil }
	}

	rep, err := e.svc.SeedBuiltinsFrom(ctx, "s1", loader("Original"))
	require.NoError(t, err)
	assert.Equal(t, 1, loads)
	assert.Equal(t, []string{"seed.a@1.0.0", "seed.b@1.0.0"}, rep.Seeded)
	manifest := rep.Manifest
	rev := e.svc.Rev()

	e.reopen()
	rep, err = e.svc.SeedBuiltinsFrom(ctx, "s1", loader("Original"))
	require.NoError(t, err)
	assert.Equal(t, 1, loads, "the seeded source is not loaded again")
	assert.True(t, rep.Unchanged)
	assert.Equal(t, manifest, rep.Manifest)
	assert.Equal(t, rev, e.svc.Rev())

	// Another source with the same content (a new binary): loaded, found
	// unchanged, and recorded, so the start after skips it.
	rep, err = e.svc.SeedBuiltinsFrom(ctx, "s2", loader("Original"))
	require.NoError(t, err)
	assert.Equal(t, 2, loads)
	assert.True(t, rep.Unchanged)
	_, err = e.svc.SeedBuiltinsFrom(ctx, "s2", loader("Original"))
	require.NoError(t, err)
	assert.Equal(t, 2, loads)

	// A user's deletion outlives a new source, as with SeedBuiltins.
	_, err = e.svc.Delete(ctx, "seed.b", "1.0.0")
	require.NoError(t, err)
	rep, err = e.svc.SeedBuiltinsFrom(ctx, "s3", loader("Updated"))
	require.NoError(t, err)
	assert.Equal(t, 3, loads)
	assert.Equal(t, []string{"seed.a@1.0.0"}, rep.Updated)
	assert.Equal(t, []string{"seed.b@1.0.0"}, rep.Kept)

	// An empty source always loads; a load that fails is reported and
	// records nothing.
	_, err = e.svc.SeedBuiltinsFrom(ctx, "", loader("Updated"))
	require.NoError(t, err)
	assert.Equal(t, 4, loads)
	boom := errors.New("embedded set unreadable")
	_, err = e.svc.SeedBuiltinsFrom(ctx, "s4", func() ([]*Bundle, error) { return nil, boom })
	require.ErrorIs(t, err, boom)
	_, err = e.svc.SeedBuiltinsFrom(ctx, "s4", loader("Updated"))
	require.NoError(t, err)
	assert.Equal(t, 5, loads, "a failed load leaves its source unrecorded")
}
