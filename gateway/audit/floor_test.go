package audit

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floodLog writes victim's receipts, then a flood of flooder's, under a
// small count bound with a tenant floor, and prunes.
func floodLog(t *testing.T, db *store.DB, opts Options, victim, flood int) *Log {
	t.Helper()
	l := open(t, db, opts)
	for i := 1; i <= victim; i++ {
		_, err := l.AppendSync(receipt(i, "globex", opts.Now()))
		require.NoError(t, err)
	}
	for i := 1; i <= flood; i++ {
		appendOK(t, l, receipt(1000+i, "acme", opts.Now()))
	}
	require.NoError(t, l.Flush())
	require.NoError(t, l.Prune())
	return l
}

func scopeReceipts(t *testing.T, db *store.DB, scope string) []Receipt {
	t.Helper()
	rs, err := List(db, Filter{Scope: scope, Limit: 10000})
	require.NoError(t, err)
	return rs
}

// The attack of issue 37 at the log: one tenant's flood fills the count
// bound. Without a floor retention removes the other tenant's receipts
// and signs that as ordinary retention; with it they stay, proven
// against the signed base, and the flood is what goes.
func TestCountRetentionNeverRemovesAnotherTenantsFloor(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared=%v", shared), func(t *testing.T) {
			db := openDB(t)
			c := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
			var events []PruneEvent
			opts := Options{Now: c.now, Shared: shared, Retention: Retention{MaxCount: 20, Floor: 5}, Cadence: Cadence{Every: 7},
				OnPrune: func(e PruneEvent) { events = append(events, e) }}
			l := floodLog(t, db, opts, 3, 300)
			require.NoError(t, l.Checkpoint())

			victim := scopeReceipts(t, db, "globex")
			require.Len(t, victim, 3, "the other tenant's receipts survive the flood")
			assert.Len(t, scopeReceipts(t, db, "acme"), 20, "the flood is cut to the count bound")

			rep := verifyDB(t, db)
			require.True(t, rep.OK, "%+v", rep.Problem)
			assert.Equal(t, 3, rep.Kept)
			assert.Equal(t, 20, rep.Count)
			require.NotNil(t, rep.Base)
			assert.Contains(t, rep.Base.Note, "by the count bound")
			assert.Contains(t, rep.Base.Note, "[kept 3 sha256:")

			// The loud part: the pass says what the count removed.
			require.NotEmpty(t, events)
			var byCount int
			for _, e := range events {
				byCount += e.ByCount
				assert.EqualValues(t, 20, e.MaxCount)
			}
			assert.Equal(t, 300-20, byCount)

			// Each kept receipt still proves against the newest checkpoint.
			for _, r := range victim {
				p, err := Prove(db, r.Seq)
				require.NoError(t, err)
				_, err = VerifyProof(p, testKey(t).Verifier(), "")
				require.NoError(t, err, "receipt %d", r.Seq)
			}
			// And the export verifies offline with them.
			var buf bytes.Buffer
			_, err := Export(db, &buf)
			require.NoError(t, err)
			erep, err := VerifyExport(&buf, VerifyOptions{Verifier: testKey(t).Verifier()})
			require.NoError(t, err)
			require.True(t, erep.OK, "%+v", erep.Problem)
			assert.Equal(t, 3, erep.Kept)
			require.NoError(t, l.Close())
		})
	}
}

func TestWithoutAFloorTheFloodRemovesTheOtherTenant(t *testing.T) {
	db := openDB(t)
	c := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	l := floodLog(t, db, Options{Now: c.now, Retention: Retention{MaxCount: 20}}, 3, 300)
	defer l.Close()
	assert.Empty(t, scopeReceipts(t, db, "globex"), "what the floor prevents")
	assert.True(t, verifyDB(t, db).OK)
}

// Kept receipts leave once their tenant has Floor newer ones, or once
// they are older than the age bound.
func TestKeptReceiptsLeaveWhenNoLongerUnderTheFloor(t *testing.T) {
	db := openDB(t)
	c := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	opts := Options{Now: c.now, Retention: Retention{MaxCount: 10, Floor: 3, MaxAge: 30 * 24 * time.Hour}}
	l := floodLog(t, db, opts, 3, 100)
	require.Len(t, scopeReceipts(t, db, "globex"), 3)
	first := scopeReceipts(t, db, "globex")[2].Seq

	// Two newer receipts of the tenant: its two oldest are no longer among
	// its newest three once the flood pushes the new ones out too.
	for i := range 2 {
		_, err := l.AppendSync(receipt(10+i, "globex", c.now()))
		require.NoError(t, err)
	}
	for i := range 50 {
		appendOK(t, l, receipt(2000+i, "acme", c.now()))
	}
	require.NoError(t, l.Flush())
	require.NoError(t, l.Prune())
	got := scopeReceipts(t, db, "globex")
	require.Len(t, got, 3)
	for _, r := range got {
		assert.Greater(t, r.Seq, first+1, "the two oldest left")
	}
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 3, rep.Kept)

	// The age bound removes kept receipts like any other.
	c.advance(31 * 24 * time.Hour)
	appendOK(t, l, receipt(3000, "acme", c.now()))
	require.NoError(t, l.Flush())
	require.NoError(t, l.Prune())
	assert.Empty(t, scopeReceipts(t, db, "globex"))
	rep = verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Zero(t, rep.Kept)
	assert.Equal(t, 1, rep.Count)
	require.NoError(t, l.Close())
}

// A kept receipt is covered by the signed base like any other: removing,
// editing or swapping one in is caught.
func TestTamperingWithKeptReceiptsIsCaught(t *testing.T) {
	setup := func(t *testing.T) (*store.DB, []Receipt) {
		db := openDB(t)
		c := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
		l := floodLog(t, db, Options{Now: c.now, Retention: Retention{MaxCount: 20, Floor: 5}}, 3, 60)
		require.NoError(t, l.Close())
		rs := scopeReceipts(t, db, "globex")
		require.Len(t, rs, 3)
		return db, rs
	}
	t.Run("removed", func(t *testing.T) {
		db, rs := setup(t)
		mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Delete(store.U64(rs[1].Seq))) })
		rep := verifyDB(t, db)
		require.False(t, rep.OK)
		assert.Equal(t, ProblemRemoved, rep.Problem.Kind)
	})
	t.Run("altered", func(t *testing.T) {
		db, rs := setup(t)
		mutate(t, db, func(rb, _ store.Bucket) {
			raw := append([]byte(nil), rb.Get(store.U64(rs[0].Seq))...)
			require.NoError(t, rb.Put(store.U64(rs[0].Seq), bytes.Replace(raw, []byte(`"outcome":"ok"`), []byte(`"outcome":"no"`), 1)))
		})
		rep := verifyDB(t, db)
		require.False(t, rep.OK)
		assert.Equal(t, ProblemAltered, rep.Problem.Kind)
	})
	t.Run("a removed receipt put back", func(t *testing.T) {
		db := openDB(t)
		c := &clock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
		l := open(t, db, Options{Now: c.now, Retention: Retention{MaxCount: 20, Floor: 5}})
		for i := 1; i <= 80; i++ {
			appendOK(t, l, receipt(i, "acme", c.now()))
		}
		require.NoError(t, l.Flush())
		before := rawGet(t, db, 7) // taken before the prune removes it
		require.NoError(t, l.Prune())
		require.NoError(t, l.Close())
		require.True(t, verifyDB(t, db).OK)
		mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Put(store.U64(7), before)) })
		rep := verifyDB(t, db)
		require.False(t, rep.OK, "a receipt below the base the base does not keep")
	})
}
