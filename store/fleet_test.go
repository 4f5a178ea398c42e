package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
)

// A replica that joins after another has counted the members but before
// its watch started is still counted: the watch starts right after the
// revision counted. (Started from "now", it missed that join, and the
// first replica counted one member until the next change: a fleet-wide
// rate limit was then not divided.)
func TestFleetCountsAReplicaThatJoinsBeforeTheWatch(t *testing.T) {
	srv := etcdtest.Start(t)
	dbA := openEtcd(t, srv, "/fleet/", []migrations.Migration{})
	dbB := openEtcd(t, srv, "/fleet/", []migrations.Migration{})
	var b *store.Fleet
	var restore func()
	restore = store.SetAfterFleetCount(func() {
		restore() // b's own join runs no hook
		var err error
		b, err = dbB.JoinFleet("b")
		require.NoError(t, err)
	})
	a, err := dbA.JoinFleet("a")
	require.NoError(t, err)
	defer a.Leave()
	defer b.Leave()
	require.Eventually(t, func() bool { return a.Live() == 2 }, 5*time.Second, 20*time.Millisecond, "a counts b")
	require.Eventually(t, func() bool { return b.Live() == 2 }, 5*time.Second, 20*time.Millisecond, "b counts a")
}
