//go:build reliability

package audit

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
)

// buildLog writes n receipts straight into bbolt, as the writer would (chain,
// tree hashes, a signed checkpoint every 1000 and at the end), in large
// transactions.
func buildLog(tb testing.TB, n int) *store.DB {
	tb.Helper()
	db, err := store.Open(filepath.Join(tb.TempDir(), "million.db"), store.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	l, err := Open(db, Options{Key: testKey(tb)}) // a fresh log: origin, buckets
	if err != nil {
		tb.Fatal(err)
	}
	origin := l.Origin()
	if err := l.Close(); err != nil {
		tb.Fatal(err)
	}
	key := testKey(tb)
	rng := factory.NewEmptyRange(0)
	prev := Genesis
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const chunk = 50000
	for start := 1; start <= n; start += chunk {
		err := db.Update(func(tx store.Tx) error {
			b, err := auditBuckets(tx)
			if err != nil {
				return err
			}
			b.receipts.SetFillPercent(1)
			b.tree.SetFillPercent(1)
			var head Head
			for i := start; i < start+chunk && i <= n; i++ {
				r := receipt(i, "default", ts.Add(time.Duration(i)*time.Millisecond))
				r.Seq, r.Type, r.PrevHash = uint64(i), TypeToolCall, prev
				raw, err := seal(&r)
				if err != nil {
					return err
				}
				if err := b.receipts.Put(store.U64(r.Seq), raw); err != nil {
					return err
				}
				var perr error
				if err := rng.Append(LeafHash(raw), func(id compact.NodeID, h []byte) {
					if perr == nil {
						perr = b.tree.Put(store.U64(nodeKey(id)), h)
					}
				}); err != nil {
					return err
				}
				if perr != nil {
					return perr
				}
				prev = r.Hash
				head = Head{Seq: r.Seq, Hash: r.Hash, Timestamp: r.Timestamp}
				if i%1000 == 0 || i == n {
					cp, err := signCheckpoint(key, origin, rng.End(), rootOf(rng))
					if err != nil {
						return err
					}
					if err := b.checkpoints.Put(store.U64(cp.Size), cp.Note); err != nil {
						return err
					}
				}
			}
			return store.PutJSON(b.root, keyHead, head)
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return db
}

// BenchmarkVerifyMillion is `audit verify` of 1,000,000 receipts (target:
// under 30 s): chain, every tree hash, 1000 checkpoint signatures and roots.
// go test -tags=reliability -run '^$' -bench VerifyMillion -benchtime 1x ./gateway/audit/
func BenchmarkVerifyMillion(b *testing.B) {
	db := buildLog(b, 1_000_000)
	v := testKey(b).Verifier()
	b.ResetTimer()
	for range b.N {
		rep, err := Verify(db, VerifyOptions{Verifier: v})
		if err != nil || !rep.OK || rep.Count != 1_000_000 || rep.Checkpoints != 1000 {
			b.Fatalf("verify: %v %+v", err, rep.Problem)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N), "s/verify")
}

// TestVerifyMillionDetectsOneEdit: at full size a single edited receipt in
// the middle is still found (100,000 under the race detector).
func TestVerifyMillionDetectsOneEdit(t *testing.T) {
	n := 1_000_000
	if raceEnabled {
		n = 100_000
	}
	db := buildLog(t, n)
	if err := db.Update(func(tx store.Tx) error {
		rb := tx.Bucket(store.BucketAudit).Bucket(bucketReceipts)
		r, _, err := decodeStrict(append([]byte(nil), rb.Get(store.U64(uint64(n/3)))...))
		if err != nil {
			return err
		}
		r.Tool = "edited"
		raw, err := seal(&r)
		if err != nil {
			return err
		}
		return rb.Put(store.U64(uint64(n/3)), raw)
	}); err != nil {
		t.Fatal(err)
	}
	rep, err := Verify(db, VerifyOptions{Verifier: testKey(t).Verifier()})
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Problem.Seq != uint64(n/3) {
		t.Fatalf("edit not found where it is: %+v", rep.Problem)
	}
}
