package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
)

// rawStored reads the b/ value of id@version as it is in the file.
func (e *env) rawStored(id, version string) []byte {
	e.t.Helper()
	var out []byte
	require.NoError(e.t, e.db.View(func(tx store.Tx) error {
		out = bytes.Clone(tx.Bucket(store.BucketCatalog).Get(bundleKey(id, version)))
		return nil
	}))
	return out
}

func TestBundlesAreStoredPackedAndReadBackExactly(t *testing.T) {
	e := newEnv(t)
	big := mustUpsert(t, e.svc, sample("big", "1.0.0", 12), "")
	tiny := &Bundle{Type: BundleType, CookbookID: "tiny", Version: "1.0.0", Title: "T",
		Entries: []Entry{{EntryID: "e", EntryType: TypeRecipeVerb, ConnectorID: "c", Verb: "v", Request: map[string]any{}}}}
	mustUpsert(t, e.svc, tiny, "")

	stored := e.rawStored("big", "1.0.0")
	require.True(t, packed(stored), "a bundle of %d entries is stored as a zstd frame", 12)
	st, err := e.svc.Get(t.Context(), "big", "1.0.0")
	require.NoError(t, err)
	assert.Less(t, len(stored), len(st.Raw)*3/4)
	// The canonical bytes, their hash and the listed hash are those of the
	// JSON, never of the frame.
	canonical, hash, err := Prepare(sample("big", "1.0.0", 12))
	require.NoError(t, err)
	assert.Equal(t, string(canonical), string(st.Raw))
	assert.Equal(t, hash, st.Hash)
	assert.Equal(t, big.ContentHash, st.Hash)

	// Export answers the same canonical bytes without decoding the frame's
	// bundle.
	exported, err := e.svc.Export(t.Context(), "big", "")
	require.NoError(t, err)
	assert.Equal(t, string(canonical), string(exported))

	// Too small to gain: kept as JSON.
	assert.Equal(t, byte('{'), e.rawStored("tiny", "1.0.0")[0])
	st, err = e.svc.Get(t.Context(), "tiny", "")
	require.NoError(t, err)
	assert.Equal(t, "T", st.Bundle.Title)
	exported, err = e.svc.Export(t.Context(), "tiny", "1.0.0")
	require.NoError(t, err)
	assert.Equal(t, string(st.Raw), string(exported))

	// Writing the same content again is still "unchanged": the comparison
	// is on the canonical JSON.
	again := mustUpsert(t, e.svc, sample("big", "1.0.0", 12), PolicyFail)
	assert.Equal(t, OutcomeUnchanged, again.Outcome)
	r, err := e.svc.Upsert(t.Context(), sample("big", "1.0.0", 11), UpsertOptions{Policy: PolicyFail})
	require.Error(t, err)
	assert.Equal(t, apperr.CodeCatalogConflict, apperr.As(err).Code)
	assert.Nil(t, r)

	// Search and render read through the frames.
	res, err := e.svc.Search(t.Context(), index.Query{Text: "recipe number"})
	require.NoError(t, err)
	assert.EqualValues(t, 12, res.Total)
	require.NoError(t, e.svc.Reindex(t.Context(), nil))
	res, err = e.svc.Search(t.Context(), index.Query{Text: "recipe number"})
	require.NoError(t, err)
	assert.EqualValues(t, 12, res.Total, "a rebuild decodes the frames")
}

// unpackAll rewrites every stored bundle as plain JSON and removes the
// marker: the file as a binary from before packing left it.
func (e *env) unpackAll() int {
	e.t.Helper()
	n := 0
	require.NoError(e.t, e.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketCatalog)
		var keys, vals [][]byte
		c := root.Cursor()
		for k, v := c.Seek([]byte(pfxBundle)); k != nil && bytes.HasPrefix(k, []byte(pfxBundle)); k, v = c.Next() {
			plain, err := unpack(v)
			if err != nil {
				return err
			}
			keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(plain))
		}
		for i := range keys {
			if err := root.Put(keys[i], vals[i]); err != nil {
				return err
			}
			n++
		}
		return root.Delete(keyPacked)
	}))
	return n
}

func TestPlainBundlesOfAnOlderFileArePackedAtOpen(t *testing.T) {
	old := packChunk
	packChunk = 3
	t.Cleanup(func() { packChunk = old })
	e := newEnv(t)
	want := map[string]string{}
	for i := range 10 {
		id := fmt.Sprintf("cb%02d", i)
		want[id] = mustUpsert(t, e.svc, sample(id, "1.0.0", 4+i), "").ContentHash
	}
	require.Equal(t, 10, e.unpackAll())
	for id := range want {
		require.False(t, packed(e.rawStored(id, "1.0.0")))
	}
	var rev uint64
	require.NoError(t, e.db.View(func(tx store.Tx) error {
		rev = readU64(tx.Bucket(store.BucketCatalog).Get(keyRev))
		return nil
	}))

	// The older file is readable as it is.
	st, err := e.svc.Get(t.Context(), "cb03", "")
	require.NoError(t, err)
	assert.Equal(t, want["cb03"], st.Hash)

	e.reopen()
	for id, hash := range want {
		assert.True(t, packed(e.rawStored(id, "1.0.0")), id)
		st, err := e.svc.Get(t.Context(), id, "")
		require.NoError(t, err)
		assert.Equal(t, hash, st.Hash, id)
	}
	assert.False(t, e.svc.Report().Rebuilt, "packing changes no content, so the index stays")
	require.NoError(t, e.db.View(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketCatalog)
		assert.Equal(t, rev, readU64(root.Get(keyRev)), "packing does not move the catalog revision")
		assert.Equal(t, storedFormZstd, string(root.Get(keyPacked)))
		return nil
	}))

	// Once marked, a start does not scan again: a plain bundle put back by
	// hand stays plain (and readable).
	require.NoError(t, e.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketCatalog)
		plain, err := unpack(root.Get(bundleKey("cb05", "1.0.0")))
		if err != nil {
			return err
		}
		return root.Put(bundleKey("cb05", "1.0.0"), bytes.Clone(plain))
	}))
	e.reopen()
	assert.False(t, packed(e.rawStored("cb05", "1.0.0")))
	st, err = e.svc.Get(t.Context(), "cb05", "")
	require.NoError(t, err)
	assert.Equal(t, want["cb05"], st.Hash)
}

func TestDamagedFramesAreStructuredErrors(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("cb", "1.0.0", 12), "")
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	huge := enc.EncodeAll(bytes.Repeat([]byte{'{'}, maxUnpackedBytes+1), nil)
	good := e.rawStored("cb", "1.0.0")
	truncated := good[:len(good)/2]
	flipped := bytes.Clone(good)
	flipped[len(flipped)-6] ^= 0xff

	for name, stored := range map[string][]byte{"truncated": truncated, "flipped": flipped, "larger than the bound": huge} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, e.db.Update(func(tx store.Tx) error {
				return tx.Bucket(store.BucketCatalog).Put(bundleKey("cb", "1.0.0"), stored)
			}))
			_, err := e.svc.Get(t.Context(), "cb", "")
			require.Error(t, err)
			ae := apperr.As(err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, ae.Code)
			assert.Equal(t, "cb", ae.Details["cookbook_id"])
			assert.Contains(t, ae.Details["cause"], "does not decompress")

			_, err = e.svc.Export(t.Context(), "cb", "")
			require.Error(t, err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)
			assert.Contains(t, apperr.As(err).Details["cause"], "does not decompress")

			_, err = e.svc.Render(t.Context(), RenderRequest{CookbookID: "cb", TemplateID: "entry_0"})
			require.Error(t, err)
			assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)

			_, err = e.svc.Upsert(context.Background(), sample("cb", "1.0.0", 3), UpsertOptions{})
			require.Error(t, err, "an upsert over a damaged frame cannot tell whether it changes anything")
		})
	}
}

// A plain bundle that does not decode is not packed at open: readers
// trust a frame's bytes to hold a bundle that decodes (Export does not
// decode them again), so packing it would hide the damage from them. That
// holds for bytes that are not JSON and for JSON that is not a bundle.
func TestDamagedPlainBundlesAreNotPacked(t *testing.T) {
	e := newEnv(t)
	mustUpsert(t, e.svc, sample("cb", "1.0.0", 12), "")
	mustUpsert(t, e.svc, sample("shape", "1.0.0", 12), "")
	mustUpsert(t, e.svc, sample("ok", "1.0.0", 12), "")
	require.Equal(t, 3, e.unpackAll())
	damaged := e.rawStored("cb", "1.0.0")
	damaged = append(damaged[:len(damaged)-2], damaged[:len(damaged)/2]...) // long, repetitive, not JSON
	require.False(t, json.Valid(damaged))
	// Valid JSON, long enough to pack, but its title is a number.
	var doc map[string]any
	require.NoError(t, json.Unmarshal(e.rawStored("shape", "1.0.0"), &doc))
	doc["title"] = 7
	wrongShape, err := json.Marshal(doc)
	require.NoError(t, err)
	_, err = decodeBundle(wrongShape)
	require.Error(t, err)
	require.NoError(t, e.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketCatalog)
		if err := root.Put(bundleKey("cb", "1.0.0"), damaged); err != nil {
			return err
		}
		return root.Put(bundleKey("shape", "1.0.0"), wrongShape)
	}))

	e.reopen()
	assert.True(t, packed(e.rawStored("ok", "1.0.0")))
	assert.Equal(t, damaged, e.rawStored("cb", "1.0.0"), "left plain, as it was")
	assert.Equal(t, wrongShape, e.rawStored("shape", "1.0.0"), "left plain, as it was")
	_, err = e.svc.Render(t.Context(), RenderRequest{CookbookID: "cb", TemplateID: "entry_0"})
	require.Error(t, err)
	assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code)
	for _, id := range []string{"cb", "shape"} {
		_, err = e.svc.Get(t.Context(), id, "")
		require.Error(t, err, id)
		assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code, id)
		_, err = e.svc.Export(t.Context(), id, "")
		require.Error(t, err, id)
		assert.Equal(t, apperr.CodeCatalogSchemaInvalid, apperr.As(err).Code, id)
		assert.Equal(t, id, apperr.As(err).Details["cookbook_id"], id)
	}
	_, err = e.svc.Export(t.Context(), "ok", "")
	require.NoError(t, err)
}

// Entry decodes only the entry asked for, through the template cache, and
// must answer what decoding the whole bundle answers: real bundles, every
// entry, read twice (the second from the cache), plus an id no entry has.
func TestEntryMatchesTheWholeBundlesEntry(t *testing.T) {
	e := newEnv(t)
	check := func(t *testing.T, raw []byte) {
		b, err := DecodeBundle(raw)
		require.NoError(t, err)
		mustUpsert(t, e.svc, b, PolicyOverwrite)
		st, err := e.svc.Get(t.Context(), b.CookbookID, b.Version)
		require.NoError(t, err)
		for _, want := range st.Bundle.Entries {
			wantRaw, err := json.Marshal(want)
			require.NoError(t, err)
			for range 2 {
				got, err := e.svc.Entry(t.Context(), b.CookbookID, b.Version, want.EntryID)
				require.NoError(t, err)
				assert.Equal(t, string(wantRaw), string(got.Entry), want.EntryID)
				assert.Equal(t, st.Bundle.CookbookID, got.CookbookID)
				assert.Equal(t, st.Bundle.Version, got.Version)
			}
		}
		_, err = e.svc.Entry(t.Context(), b.CookbookID, b.Version, "no-such-entry")
		require.Error(t, err)
		assert.Equal(t, apperr.CodeCatalogNotFound, apperr.As(err).Code)
		assert.Equal(t, b.CookbookID, apperr.As(err).Details["cookbook_id"])
	}
	check(t, []byte(netHTTP))
	check(t, sampleJSON(t, sample("sample", "1.0.0", 12)))
	t.Run("predecessor fixtures", func(t *testing.T) {
		for _, v := range []string{"1.1.0", "1.2.0", "1.3.0"} {
			check(t, loadFixture(t, v))
		}
	})
}

func sampleJSON(t *testing.T, b *Bundle) []byte {
	raw, err := json.Marshal(b)
	require.NoError(t, err)
	return raw
}
