// Package scaleout tests several replicas sharing one etcd store: in
// process on an embedded etcd (the audit chain, the catalog index
// following other replicas' writes, backup and restore, claims), and with
// the etcd build tag, replica processes on a real etcd server
// (replicas_test.go, outage_test.go); the scale tag adds writes of more
// keys than one etcd transaction holds (scale_test.go).
package scaleout

import (
	"errors"
	"sync"
	"sync/atomic"
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

// each runs f(0), ..., f(n-1) on a few goroutines and fails t with their
// errors: a test's seed writes then wait on etcd's commits together rather
// than one round trip after another.
func each(t testing.TB, n int, f func(i int) error) {
	t.Helper()
	errs := make([]error, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				errs[i] = f(i)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}
