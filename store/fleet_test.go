package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

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
		b, err = dbB.JoinFleet("b", store.FleetOptions{})
		require.NoError(t, err)
	})
	a, err := dbA.JoinFleet("a", store.FleetOptions{})
	require.NoError(t, err)
	defer a.Leave()
	defer b.Leave()
	require.Eventually(t, func() bool { return a.Live() == 2 }, 5*time.Second, 20*time.Millisecond, "a counts b")
	require.Eventually(t, func() bool { return b.Live() == 2 }, 5*time.Second, 20*time.Millisecond, "b counts a")
}

// A replica whose membership lease lapses while it lives (here revoked;
// in production, etcd not answering its keep-alives for FleetTTL)
// registers again on a new lease, runs its rejoin hooks, and a claim it
// makes again there holds on the new lease: another replica cannot take
// it.
func TestFleetRegistersAgainAfterItsLeaseLapses(t *testing.T) {
	srv := etcdtest.Start(t)
	dbA := openEtcd(t, srv, "/lapse/", []migrations.Migration{})
	dbB := openEtcd(t, srv, "/lapse/", []migrations.Migration{})
	a, err := dbA.JoinFleet("a", store.FleetOptions{})
	require.NoError(t, err)
	defer a.Leave()
	b, err := dbB.JoinFleet("b", store.FleetOptions{})
	require.NoError(t, err)
	defer b.Leave()
	require.Eventually(t, func() bool { return a.Live() == 2 && b.Live() == 2 }, 5*time.Second, 20*time.Millisecond)
	require.True(t, a.Claim("task-1"))
	rejoined := make(chan bool, 1)
	a.OnRejoin(func() { rejoined <- a.Claim("task-1") })

	cli := dbA.Etcd().Client()
	ctx := context.Background()
	lease := func(key string) clientv3.LeaseID {
		resp, err := cli.Get(ctx, "/lapse/"+key)
		require.NoError(t, err)
		if len(resp.Kvs) == 0 {
			return clientv3.NoLease
		}
		return clientv3.LeaseID(resp.Kvs[0].Lease)
	}
	old := lease("members/a")
	require.NotEqual(t, clientv3.NoLease, old)
	_, err = cli.Revoke(ctx, old)
	require.NoError(t, err)

	select {
	case held := <-rejoined:
		require.True(t, held, "the rejoin hook claims the task again")
	case <-time.After(3 * store.FleetTTL):
		t.Fatal("the replica did not register again after its lease lapsed")
	}
	require.Eventually(t, func() bool { return a.State().Registered }, 5*time.Second, 20*time.Millisecond)
	cur := lease("members/a")
	require.NotEqual(t, clientv3.NoLease, cur, "registered again")
	require.NotEqual(t, old, cur, "on a new lease")
	require.Equal(t, cur, lease("claims/task-1"), "the claim is on the new lease")
	require.False(t, b.Claim("task-1"), "the other replica cannot take the claim")
	require.Eventually(t, func() bool { return a.Live() == 2 && b.Live() == 2 }, 5*time.Second, 20*time.Millisecond)
}

// A claim of this replica left on a lease that lapsed (after an etcd
// restart the lapsed lease lives on until its TTL) is moved onto the
// current lease by Claim, not taken as held: it would vanish with the
// lapsed lease and let another replica take the task too.
func TestFleetClaimMovesAClaimOffALapsedLease(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/moved/", []migrations.Migration{})
	a, err := db.JoinFleet("a", store.FleetOptions{})
	require.NoError(t, err)
	defer a.Leave()
	cli := db.Etcd().Client()
	ctx := context.Background()
	g, err := cli.Grant(ctx, 60)
	require.NoError(t, err)
	_, err = cli.Put(ctx, "/moved/claims/task-1", "a", clientv3.WithLease(g.ID))
	require.NoError(t, err)
	require.True(t, a.Claim("task-1"))
	member, err := cli.Get(ctx, "/moved/members/a")
	require.NoError(t, err)
	claim, err := cli.Get(ctx, "/moved/claims/task-1")
	require.NoError(t, err)
	require.Len(t, claim.Kvs, 1)
	require.Equal(t, member.Kvs[0].Lease, claim.Kvs[0].Lease, "the claim moved to the replica's current lease")
	_, err = cli.Revoke(ctx, g.ID)
	require.NoError(t, err)
	require.True(t, a.Claim("task-1"), "it outlives the old lease")
}

// FleetMembers counts a replica that registers while it watches the list
// for quiet (a restore's second look), and none when none does.
func TestFleetMembersSeesALateRegistration(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcd(t, srv, "/late/", []migrations.Migration{})
	n, err := db.FleetMembers(context.Background(), 300*time.Millisecond)
	require.NoError(t, err)
	require.Zero(t, n)
	other := openEtcd(t, srv, "/late/", []migrations.Migration{})
	joined := make(chan *store.Fleet, 1)
	go func() {
		f, err := other.JoinFleet("late", store.FleetOptions{})
		assert.NoError(t, err)
		joined <- f
	}()
	n, err = db.FleetMembers(context.Background(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	(<-joined).Leave()
}
