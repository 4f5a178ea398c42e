package audit

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/test/within"
)

// With an hour's VerifyDelay, anything that waited for it would hang:
// within.Run fails those steps instead.

func TestVerifyDelayHoldsTheStartUpCheckBack(t *testing.T) {
	db := openDB(t)
	l := open(t, db, Options{VerifyDelay: time.Hour})
	appendOK(t, l, receipt(1, "default", time.Now()))
	select {
	case <-l.Verified():
		t.Fatal("verified before the delay or anything that needs it")
	case <-time.After(100 * time.Millisecond):
	}
	// Nothing is committed before the verification.
	assert.Nil(t, rawGet(t, db, 1))
	// Close cuts the wait short, verifies, then commits what is queued.
	within.Run(t, "Close", func() { require.NoError(t, l.Close()) })
	assert.NotNil(t, rawGet(t, db, 1))
	rep := verifyDB(t, db)
	require.True(t, rep.OK, "%+v", rep.Problem)
	assert.Equal(t, 1, rep.Count)
}

func TestVerifyDelayEndsForWhatWaitsOnIt(t *testing.T) {
	for name, wait := range map[string]func(*Log) error{
		"Integrity": func(l *Log) error {
			p, err := l.Integrity()
			if err == nil && p != nil {
				err = errors.New(p.Message)
			}
			return err
		},
		"AppendSync": func(l *Log) error { _, err := l.AppendSync(receipt(1, "default", time.Now())); return err },
		"Flush":      func(l *Log) error { return l.Flush() },
		"Checkpoint": func(l *Log) error { return l.Checkpoint() },
	} {
		t.Run(name, func(t *testing.T) {
			db := openDB(t)
			l := open(t, db, Options{VerifyDelay: time.Hour})
			defer l.Close()
			within.Run(t, name, func() { require.NoError(t, wait(l)) })
			select {
			case <-l.Verified():
			default:
				t.Fatal("returned before the verification")
			}
		})
	}
}

func TestVerifyDelayStillFindsADamagedLog(t *testing.T) {
	f := newTamperFixture(t, 6)
	f.update(t, func(b buckets) { require.NoError(t, b.receipts.Delete(store.U64(6))) })
	found := make(chan *Problem, 1)
	l, err := Open(f.db, Options{Key: f.key, VerifyDelay: 50 * time.Millisecond, OnStartProblem: func(p *Problem) { found <- p }})
	require.NoError(t, err)
	defer l.Close()
	select {
	case p := <-found:
		assert.Equal(t, ProblemTruncated, p.Kind)
	case <-time.After(10 * time.Second):
		t.Fatal("the delayed verification never ran")
	}
	require.NotNil(t, integrity(t, l))
}

// integrity is Integrity on a log whose store is always reachable.
func integrity(t testing.TB, l *Log) *Problem {
	t.Helper()
	p, err := l.Integrity()
	require.NoError(t, err)
	return p
}
