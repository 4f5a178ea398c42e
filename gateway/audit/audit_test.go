package audit

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testKey is a fixed audit key (tests that need the key file outside the
// data folder use keyFile).
func testKey(t testing.TB) *Key {
	k, err := NewKey(make([]byte, KeySize), "test")
	require.NoError(t, err)
	return k
}

func open(t testing.TB, db *store.DB, opts Options) *Log {
	t.Helper()
	if opts.Key == nil {
		opts.Key = testKey(t)
	}
	l, err := Open(db, opts)
	require.NoError(t, err)
	return l
}

func verifyDB(t testing.TB, db *store.DB, saved ...[]byte) Report {
	t.Helper()
	rep, err := Verify(db, VerifyOptions{Verifier: testKey(t).Verifier(), Saved: saved})
	require.NoError(t, err)
	return rep
}

func appendOK(t testing.TB, l *Log, r Receipt) Ref {
	t.Helper()
	ref, err := l.Append(r)
	require.NoError(t, err)
	return ref
}

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func receipt(i int, scope string, at time.Time) Receipt {
	return Receipt{
		CallID: fmt.Sprintf("call_%d", i), Timestamp: at.UTC().Format(time.RFC3339Nano),
		Caller: "local", Transport: "stdio", Scope: scope, Tool: fmt.Sprintf("tool_%d", i%3),
		CapabilityUsed: "vault_read", ParamsHash: "hmac-sha256:00", ResultHash: "hmac-sha256:11",
		Outcome: OutcomeOK, DurationMS: 0.125,
	}
}

func writeLog(t *testing.T, db *store.DB, n int) *Log {
	t.Helper()
	l := open(t, db, Options{})
	for i := 1; i <= n; i++ {
		appendOK(t, l, receipt(i, "default", time.Now()))
	}
	require.NoError(t, l.Flush())
	return l
}

func TestChainIsContiguousAndVerifies(t *testing.T) {
	db := openDB(t)
	l := writeLog(t, db, 25)
	require.NoError(t, l.Close())
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 25, rep.Count)
	assert.Equal(t, uint64(1), rep.FirstSeq)
	assert.Equal(t, uint64(25), rep.LastSeq)

	all, err := List(db, Filter{Limit: 100})
	require.NoError(t, err)
	require.Len(t, all, 25)
	for i, r := range all {
		assert.Equal(t, uint64(25-i), r.Seq, "newest first")
		assert.Equal(t, TypeToolCall, r.Type)
		assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, r.Hash)
		if i+1 < len(all) {
			assert.Equal(t, all[i+1].Hash, r.PrevHash)
		}
	}
	assert.Equal(t, Genesis, all[24].PrevHash)

	// A reopened log continues the same chain.
	l2 := open(t, db, Options{})
	_, err = l2.AppendSync(receipt(26, "default", time.Now()))
	require.NoError(t, err)
	require.NoError(t, l2.Close())
	rep = verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 26, rep.Count)
}

func rawGet(t *testing.T, db *store.DB, seq uint64) []byte {
	var out []byte
	require.NoError(t, db.View(func(tx store.Tx) error {
		out = append([]byte(nil), tx.Bucket(store.BucketAudit).Bucket(bucketReceipts).Get(store.U64(seq))...)
		return nil
	}))
	return out
}

func mutate(t *testing.T, db *store.DB, fn func(rb store.Bucket, b store.Bucket)) {
	require.NoError(t, db.Update(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketAudit)
		fn(b.Bucket(bucketReceipts), b)
		return nil
	}))
}

func TestVerifyDetectsEachKindOfTampering(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, db *store.DB)
		kind   string
		seq    uint64
	}{
		{"edit a field", func(t *testing.T, db *store.DB) {
			raw := rawGet(t, db, 4)
			edited := []byte(string(raw[:0]) + replaceOnce(string(raw), `"outcome":"ok"`, `"outcome":"MCP_INTERNAL"`))
			mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Put(store.U64(4), edited)) })
		}, ProblemAltered, 4},
		{"edit and recompute its own hash", func(t *testing.T, db *store.DB) {
			r, _, err := decodeStrict(rawGet(t, db, 5))
			require.NoError(t, err)
			r.Tool = "something_else"
			raw, err := seal(&r)
			require.NoError(t, err)
			mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Put(store.U64(5), raw)) })
		}, ProblemAltered, 5},
		{"delete one in the middle", func(t *testing.T, db *store.DB) {
			mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Delete(store.U64(3))) })
		}, ProblemRemoved, 3},
		{"delete the first", func(t *testing.T, db *store.DB) {
			mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Delete(store.U64(1))) })
		}, ProblemRemoved, 1},
		{"swap two receipts", func(t *testing.T, db *store.DB) {
			a, b := rawGet(t, db, 6), rawGet(t, db, 7)
			mutate(t, db, func(rb, _ store.Bucket) {
				require.NoError(t, rb.Put(store.U64(6), b))
				require.NoError(t, rb.Put(store.U64(7), a))
			})
		}, ProblemReordered, 6},
		{"truncate the tail", func(t *testing.T, db *store.DB) {
			mutate(t, db, func(rb, _ store.Bucket) {
				require.NoError(t, rb.Delete(store.U64(10)))
				require.NoError(t, rb.Delete(store.U64(9)))
			})
		}, ProblemTruncated, 9},
		{"reformat bytes", func(t *testing.T, db *store.DB) {
			raw := rawGet(t, db, 2)
			mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Put(store.U64(2), append([]byte(" "), raw...))) })
		}, ProblemAltered, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			require.NoError(t, writeLog(t, db, 10).Close())
			tc.tamper(t, db)
			rep := verifyDB(t, db)
			require.False(t, rep.OK)
			require.NotNil(t, rep.Problem)
			assert.Equal(t, tc.kind, rep.Problem.Kind, rep.Problem.Message)
			assert.Equal(t, tc.seq, rep.Problem.Seq, rep.Problem.Message)
		})
	}
}

func replaceOnce(s, old, new string) string {
	for i := 0; i+len(old) <= len(s); i++ {
		if s[i:i+len(old)] == old {
			return s[:i] + new + s[i+len(old):]
		}
	}
	panic("not found: " + old)
}

func TestRetentionKeepsLogVerifiable(t *testing.T) {
	db := openDB(t)
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	l := open(t, db, Options{Now: c.now, Retention: Retention{MaxCount: 5, MaxAge: 48 * time.Hour}, Cadence: Cadence{Every: 2}})
	var saved [][]byte
	l.afterSign = func(cp Checkpoint) { saved = append(saved, cp.Note) }
	for i := 1; i <= 12; i++ {
		appendOK(t, l, receipt(i, "default", c.now()))
		require.NoError(t, l.Flush())
		c.advance(time.Hour)
	}
	require.NoError(t, l.Prune())
	rep := verifyDB(t, db, saved...)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 5, rep.Count, "count bound")
	assert.Equal(t, uint64(8), rep.FirstSeq)
	require.NotNil(t, rep.Base)
	assert.Equal(t, BaseRetention, rep.Base.Kind)
	assert.Equal(t, uint64(7), rep.Base.Size)
	assert.Equal(t, uint64(12), rep.TreeSize)
	statuses := map[string]int{}
	for _, s := range rep.Saved {
		statuses[s.Status]++
	}
	assert.Positive(t, statuses["consistent"], "saved checkpoints after the prune are proven")
	assert.Positive(t, statuses["before_retention"], "older ones are reported, not failed")

	// A retained receipt still has an inclusion proof although its
	// neighbours' leaves are gone.
	require.NoError(t, l.Checkpoint())
	p, err := Prove(db, 8)
	require.NoError(t, err)
	_, err = VerifyProof(p, testKey(t).Verifier(), "")
	require.NoError(t, err)

	// Age bound: 3 days later, everything is older than 48h.
	c.advance(72 * time.Hour)
	appendOK(t, l, receipt(13, "default", c.now()))
	require.NoError(t, l.Prune())
	require.NoError(t, l.Close())
	rep = verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 1, rep.Count)
	assert.Equal(t, uint64(13), rep.FirstSeq)

	// Deleting the first receipt after the base is still caught.
	mutate(t, db, func(rb, _ store.Bucket) { require.NoError(t, rb.Delete(store.U64(13))) })
	rep = verifyDB(t, db)
	require.False(t, rep.OK)
	assert.Equal(t, ProblemTruncated, rep.Problem.Kind)
}

func TestParseRetention(t *testing.T) {
	r, err := ParseRetention("")
	require.NoError(t, err)
	assert.Equal(t, DefaultRetention, r)
	r, err = ParseRetention("30d, 5000")
	require.NoError(t, err)
	assert.Equal(t, Retention{MaxAge: 30 * 24 * time.Hour, MaxCount: 5000, Floor: DefaultTenantFloor}, r)
	r, err = ParseRetention("720h")
	require.NoError(t, err)
	assert.Equal(t, Retention{MaxAge: 720 * time.Hour, Floor: DefaultTenantFloor}, r)
	r, err = ParseRetention("off")
	require.NoError(t, err)
	assert.Equal(t, Retention{}, r)
	for _, bad := range []string{"banana", "-3d", "0d", "10x"} {
		_, err := ParseRetention(bad)
		assert.Error(t, err, bad)
	}
	f, err := ParseFloor("")
	require.NoError(t, err)
	assert.EqualValues(t, DefaultTenantFloor, f)
	f, err = ParseFloor(" 0 ")
	require.NoError(t, err)
	assert.Zero(t, f)
	_, err = ParseFloor("-1")
	assert.Error(t, err)
}

func TestFailedCommitMarksUnhealthyAndRecovers(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{})
	defer l.Close()
	fail := true
	l.beforeCommit = func() error {
		if fail {
			return errors.New("disk full")
		}
		return nil
	}
	ref1, err := l.AppendSync(receipt(1, "s", time.Now()))
	require.Error(t, err)
	ok, msg := l.Healthy()
	assert.False(t, ok)
	assert.Contains(t, msg, "disk full")
	fail = false
	ref2, err := l.AppendSync(receipt(2, "s", time.Now()))
	require.NoError(t, err)
	ok, _ = l.Healthy()
	assert.True(t, ok)
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 2, rep.Count, "the failed receipt was kept and committed with the next one, under the reference it was given")
	assert.Equal(t, uint64(1), ref1.Seq)
	assert.Equal(t, uint64(2), ref2.Seq)
	all, err := List(db, Filter{})
	require.NoError(t, err)
	assert.Equal(t, "call_1", all[1].CallID)
}

func TestBacklogBoundsMemoryWithoutGaps(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{MaxBacklog: 3})
	defer l.Close()
	fail := true
	l.beforeCommit = func() error {
		if fail {
			return errors.New("disk full")
		}
		return nil
	}
	for i := range 3 {
		_, err := l.AppendSync(receipt(i, "s", time.Now()))
		require.Error(t, err)
	}
	_, err := l.Append(receipt(9, "s", time.Now()))
	require.ErrorIs(t, err, ErrBacklog, "a full backlog refuses without numbering")
	fail = false
	require.NoError(t, l.Flush())
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 3, rep.Count)
	_, err = l.Append(receipt(10, "s", time.Now()))
	require.NoError(t, err)
}

func TestListFilters(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{})
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 9; i++ {
		scope := "a"
		if i%2 == 0 {
			scope = "b"
		}
		r := receipt(i, scope, base.Add(time.Duration(i)*time.Minute))
		if i == 5 {
			r.Outcome = "MCP_PERMISSION_DENIED"
		}
		appendOK(t, l, r)
	}
	got, err := l.List(Filter{Scope: "a"})
	require.NoError(t, err)
	require.Len(t, got, 5)
	for _, r := range got {
		assert.Equal(t, "a", r.Scope)
	}
	got, err = l.List(Filter{Scope: "a", Outcome: "MCP_PERMISSION_DENIED"})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "call_5", got[0].CallID)
	got, err = l.List(Filter{Scope: "b", Tool: "tool_2"})
	require.NoError(t, err)
	require.Len(t, got, 2) // 2 and 8
	got, err = l.List(Filter{Since: base.Add(7 * time.Minute), Limit: 2})
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "call_9", got[0].CallID)
	require.NoError(t, l.Close())
	_, err = l.Append(receipt(10, "a", base))
	assert.ErrorIs(t, err, ErrClosed)
}

func TestConcurrentAppendsStayChained(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 50 {
				if i%10 == 0 {
					_, err := l.AppendSync(receipt(i, "c", time.Now()))
					assert.NoError(t, err)
				} else {
					_, err := l.Append(receipt(i, "c", time.Now()))
					assert.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, l.Close())
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 400, rep.Count)
}

func TestHasherCanonicalArgs(t *testing.T) {
	h, err := NewHasher(make([]byte, 32))
	require.NoError(t, err)
	a := h.SumArgs([]byte(`{"b":1,"a":"x"}`))
	b := h.SumArgs([]byte(` { "a" : "x", "b" : 1 } `))
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, h.SumArgs([]byte(`{"a":"y","b":1}`)))
	assert.Equal(t, h.SumArgs(nil), h.SumArgs([]byte("null")))
	assert.Regexp(t, `^hmac-sha256:[0-9a-f]{64}$`, a)
	other, _ := NewHasher(append(make([]byte, 31), 1))
	assert.NotEqual(t, a, other.SumArgs([]byte(`{"a":"x","b":1}`)), "keyed")
	_, err = NewHasher([]byte("short"))
	assert.Error(t, err)
}

func TestAsyncReceiptIsCommittedWithoutFlush(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{Linger: 20 * time.Millisecond})
	defer l.Close()
	for i := range 3 {
		appendOK(t, l, receipt(i, "s", time.Now()))
	}
	// The writer commits on its own once the linger window closes.
	require.Eventually(t, func() bool {
		rs, err := List(db, Filter{})
		return err == nil && len(rs) == 3
	}, 5*time.Second, 5*time.Millisecond)
}

func TestOddStringsStayVerifiable(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{})
	r := receipt(1, "ten<ant>&\u2028", time.Now())
	r.Tool = "bad\xff\xfeutf8\x00\n\"quoted\""
	r.Session = "stdio-\xc3"
	r.RulesEvaluated = []string{"a<b>", "\xff"}
	r.RulesMatched = []string{}
	_, err := l.AppendSync(r)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
}

// On a shared log a receipt's number is known only once committed: Append
// (read calls) returns at once without a reference, even while a commit
// is stuck, and its receipt is committed with the next group, found by
// its call id; AppendSync (write calls) waits for the commit and returns
// the receipt's reference.
func TestSharedAppendDoesNotWaitForTheCommit(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{Shared: true})
	defer l.Close()
	<-l.Verified()
	release := make(chan struct{})
	var once sync.Once
	l.beforeCommit = func() error {
		once.Do(func() { <-release })
		return nil
	}
	synced := make(chan Ref, 1)
	go func() {
		ref, err := l.AppendSync(receipt(1, "s", time.Now()))
		assert.NoError(t, err)
		synced <- ref
	}()
	returned := make(chan Ref, 1)
	go func() {
		ref, err := l.Append(receipt(2, "s", time.Now()))
		assert.NoError(t, err)
		returned <- ref
	}()
	select {
	case ref := <-returned:
		assert.Zero(t, ref, "no number before the commit")
	case <-time.After(10 * time.Second):
		t.Fatal("Append on a shared log waited for a commit")
	}
	select {
	case <-synced:
		t.Fatal("AppendSync returned before its commit")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	ref := <-synced
	require.NotZero(t, ref.Seq)
	require.Len(t, ref.LeafHash, 64)
	require.Equal(t, l.Origin(), ref.Origin)
	require.Eventually(t, func() bool {
		rs, err := List(db, Filter{CallID: "call_2"})
		return err == nil && len(rs) == 1 && rs[0].Seq != 0
	}, 10*time.Second, 5*time.Millisecond, "the read call's receipt is committed without a flush")
	rs, err := List(db, Filter{CallID: "call_1"})
	require.NoError(t, err)
	require.Len(t, rs, 1)
	require.Equal(t, ref.Seq, rs[0].Seq, "the reference AppendSync returned is where its receipt is")
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	require.Equal(t, 2, rep.Count, "each call has exactly one receipt")
}
