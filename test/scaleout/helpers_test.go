// Package scaleout tests several replicas sharing one etcd store (an
// embedded etcd): the audit chain, the catalog index following other
// replicas' writes, approval handles read and finished anywhere.
package scaleout

import (
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/stretchr/testify/require"
)

func openEtcd(t testing.TB, srv *etcdtest.Server, prefix string) *store.DB {
	t.Helper()
	db, err := store.OpenEtcd(store.EtcdConfig{Endpoints: []string{srv.Endpoint}, Prefix: prefix}, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func openEtcdTimeout(t testing.TB, srv *etcdtest.Server, prefix string, timeout time.Duration) *store.DB {
	t.Helper()
	db, err := store.OpenEtcd(store.EtcdConfig{Endpoints: []string{srv.Endpoint}, Prefix: prefix, RequestTimeout: timeout}, store.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}
