package catalog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentWritesCommitTogether: writes arriving while another
// commits are committed in groups; each caller still gets its own outcome
// (a conflict fails only its own write, and the others of its group still
// land), every acknowledged write is stored, and the index agrees with the
// store, also after a reopen.
func TestConcurrentWritesCommitTogether(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	mustUpsert(t, e.svc, sample("shared", "1.0.0", 2), PolicyFail)
	var first atomic.Bool
	e.svc.beforeCommit = func() {
		// Hold the first commit so that the others queue behind it.
		if first.CompareAndSwap(false, true) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	const writers, each = 12, 8
	type outcome struct {
		id, version string
		err         error
	}
	results := make(chan outcome, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				var b *Bundle
				switch i % 4 {
				case 3:
					// Same id and version as the seeded one, other content:
					// a conflict under FAIL.
					b = sample("shared", "1.0.0", 3)
				case 2:
					b = sample("shared", fmt.Sprintf("2.%d.%d", w, i), 1)
				default:
					b = sample(fmt.Sprintf("cb-%d-%d", w, i), "1.0.0", 2)
				}
				_, err := e.svc.Upsert(ctx, b, UpsertOptions{Policy: PolicyFail})
				results <- outcome{b.CookbookID, b.Version, err}
			}
		})
	}
	wg.Wait()
	close(results)
	assert.Positive(t, e.svc.grouped.Load(), "some commits held several writes")

	okWrites := 1 // the seed
	for r := range results {
		if r.version == "1.0.0" && r.id == "shared" {
			require.Error(t, r.err)
			assert.Equal(t, apperr.CodeCatalogConflict, apperr.As(r.err).Code)
			continue
		}
		require.NoError(t, r.err, "%s@%s", r.id, r.version)
		okWrites++
		st, err := e.svc.Get(ctx, r.id, r.version)
		require.NoError(t, err, "acknowledged %s@%s is stored", r.id, r.version)
		assert.Equal(t, r.version, st.Bundle.Version)
	}
	assert.Equal(t, uint64(okWrites), e.svc.Rev(), "one revision per successful write")

	check := func() {
		res, err := e.svc.Search(ctx, index.Query{Limit: index.MaxLimit})
		require.NoError(t, err)
		// Latest versions only: 2 entries for each of the new cookbooks
		// (writers * each/2 of them) and 1 for the shared one, whose
		// highest version (2.x) has one entry.
		assert.Equal(t, uint64(writers*each/2*2+1), res.Total)
		all, err := e.svc.Search(ctx, index.Query{CookbookID: "shared", AllVersions: true, Limit: index.MaxLimit})
		require.NoError(t, err)
		assert.Equal(t, uint64(2+writers*each/4), all.Total, "every version of the shared cookbook is indexed")
	}
	check()
	e.svc.beforeCommit = nil
	e.reopen()
	check()
	assert.Equal(t, uint64(okWrites), e.svc.Rev())
}

// TestGroupedWritePanicReleasesEveryone: a write that panics while another
// caller commits the group fails alone, with an error; the others land and
// later writes are not stuck.
func TestGroupedWritePanicReleasesEveryone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var first atomic.Bool
	e.svc.beforeCommit = func() {
		if first.CompareAndSwap(false, true) {
			time.Sleep(50 * time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			errs[i] = e.svc.write(ctx, func(w *writeTx) error {
				if i == 3 {
					panic("boom")
				}
				b := sample(fmt.Sprintf("p-%d", i), "1.0.0", 1)
				canonical, hash, err := Prepare(b)
				if err != nil {
					return err
				}
				return w.put(b, canonical, hash)
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if i == 3 {
			require.ErrorContains(t, err, "failed unexpectedly")
			continue
		}
		require.NoError(t, err, i)
	}
	mustUpsert(t, e.svc, sample("after", "1.0.0", 1), PolicyFail)
	assert.Equal(t, uint64(6), e.svc.Rev())
}
