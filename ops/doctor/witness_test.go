package doctor

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

// TestWitnessCheck: no line without witnesses; WARN for one unreachable
// or behind; OK when every witness cosigned the newest checkpoint.
func TestWitnessCheck(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	_, shown := witnessCheck(Inputs{DB: db})
	require.False(t, shown)

	key, err := audit.NewKey(make([]byte, audit.KeySize), "test")
	require.NoError(t, err)
	l, err := audit.Open(db, audit.Options{Key: key})
	require.NoError(t, err)
	_, err = l.AppendSync(audit.Receipt{CallID: "c1", Tool: "t", Outcome: audit.OutcomeOK})
	require.NoError(t, err)
	require.NoError(t, l.Close()) // signs a checkpoint of 1 receipt

	require.NoError(t, audit.SaveWitnessState(db, audit.WitnessState{Name: "w", URL: "http://w.example", Cosigned: 1, Submitted: 1, At: time.Now()}))
	r, shown := witnessCheck(Inputs{DB: db})
	require.True(t, shown)
	require.Equal(t, OK, r.Status, r.Detail)

	require.NoError(t, audit.SaveWitnessState(db, audit.WitnessState{Name: "d", URL: "http://dead.example", Submitted: 1, Error: "witness unreachable: connection refused"}))
	r, _ = witnessCheck(Inputs{DB: db})
	require.Equal(t, WARN, r.Status)
	require.Contains(t, r.Detail, "unreachable")

	require.NoError(t, audit.SaveWitnessState(db, audit.WitnessState{Name: "d", URL: "http://dead.example", Cosigned: 0, Submitted: 0}))
	r, _ = witnessCheck(Inputs{DB: db})
	require.Equal(t, WARN, r.Status)
	require.Contains(t, r.Detail, "behind")
}
