//go:build etcd

package scaleout

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/accordsai/accords-mcp/store/kv/kvtest"
	"github.com/stretchr/testify/require"
)

// The store's conformance suite passes on the real etcd server (Debian's
// etcd-server, an older minor version than the client library): the
// range compares, Txn and watches the backend uses are ones that server
// answers alike.
func TestRealEtcdConformance(t *testing.T) {
	p := etcdtest.StartProcess(t)
	st, err := store.OpenEtcd(store.EtcdConfig{Endpoints: []string{p.Endpoint}, Prefix: "/version/"}, store.Options{})
	require.NoError(t, err)
	defer st.Close()
	status, err := st.EtcdStatus(context.Background())
	require.NoError(t, err)
	t.Logf("etcd server %s", status.ServerVer)
	n := 0
	kvtest.Run(t, func(t *testing.T) kvtest.Store {
		n++
		db, err := store.OpenEtcd(store.EtcdConfig{Endpoints: []string{p.Endpoint}, Prefix: fmt.Sprintf("/conformance-%d/", n)},
			store.Options{Migrations: []migrations.Migration{}})
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	})
	// Leases and watches, as the fleet uses them.
	a, err := st.JoinFleet("a", store.FleetOptions{})
	require.NoError(t, err)
	defer a.Leave()
	other := openEtcdAt(t, p.Endpoint, "/version/")
	b, err := other.JoinFleet("b", store.FleetOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.Live() == 2 }, 5*time.Second, 20*time.Millisecond, "the watch counts b")
	require.True(t, a.Claim("t"))
	require.False(t, b.Claim("t"))
	b.Leave()
	require.Eventually(t, func() bool { return a.Live() == 1 }, 5*time.Second, 20*time.Millisecond, "the watch sees b leave")
}
