// Package scaleout tests several replicas sharing one etcd store: in
// process on an embedded etcd (the audit chain, the catalog index
// following other replicas' writes, backup and restore, claims), and with
// the etcd build tag, replica processes on a real etcd server
// (replicas_test.go, outage_test.go).
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
	return openEtcdAt(t, srv.Endpoint, prefix)
}

// openEtcdAt opens the store under prefix on the etcd at endpoint.
func openEtcdAt(t testing.TB, endpoint, prefix string) *store.DB {
	t.Helper()
	db, err := store.OpenEtcd(store.EtcdConfig{Endpoints: []string{endpoint}, Prefix: prefix}, store.Options{})
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
