package scaleout

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/etcdkv/etcdtest"
	"github.com/accordsai/accords-mcp/test/within"
	"github.com/stretchr/testify/require"
)

// A replica whose start-up verification cannot read etcd (etcd went down
// after the log opened) neither takes the log for a damaged one nor stops
// serving: Integrity says the verification is waiting for the store (a
// retryable MCP_STORE_UNAVAILABLE for write tools), receipts queue up
// without blocking their callers even past the queue's size (one whose
// caller waits for its commit is told at once that it did not happen, and
// stays queued, as with any failed commit), and once
// etcd is back the verification runs, finds the log intact, and the
// queued receipts are committed onto one chain that verifies. Nothing
// marks the shared log as failed for the other replicas.
func TestSharedAuditLogStartVerificationWaitsOutAnEtcdOutage(t *testing.T) {
	srv := etcdtest.Start(t)
	const prefix = "/audit-outage/"
	db1 := openEtcd(t, srv, prefix)
	l1, err := audit.Open(db1, audit.Options{Key: auditKey(t), Shared: true})
	require.NoError(t, err)
	for n := range 20 {
		_, err := l1.AppendSync(audit.Receipt{CallID: fmt.Sprintf("before-%d", n), Tool: "t", Outcome: "ok",
			Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		require.NoError(t, err)
	}
	require.NoError(t, l1.Close())

	db2 := openEtcdTimeout(t, srv, prefix, 300*time.Millisecond)
	// The delay holds the verification back until etcd is down.
	l2, err := audit.Open(db2, audit.Options{Key: auditKey(t), Shared: true, QueueSize: 8, VerifyDelay: time.Hour})
	require.NoError(t, err)
	srv.Stop()

	within.Run(t, "Integrity while etcd is down", func() {
		p, err := l2.Integrity()
		require.Nil(t, p, "an unreachable store is not a damaged log")
		require.Error(t, err)
		require.True(t, errors.Is(err, store.ErrUnavailable), "retryable: %v", err)
	})
	within.Run(t, "appends while etcd is down", func() {
		for n := range 40 { // five times the queue
			_, err := l2.Append(audit.Receipt{CallID: fmt.Sprintf("during-%d", n), Tool: "t", Outcome: "ok",
				Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
			require.NoError(t, err)
		}
	})

	within.Run(t, "a write call's receipt and a flush while etcd is down", func() {
		_, err := l2.AppendSync(audit.Receipt{CallID: "sync-during", Tool: "t", Outcome: "ok",
			Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		require.True(t, errors.Is(err, store.ErrUnavailable), "answered at once, retryable: %v", err)
		require.True(t, errors.Is(l2.Flush(), store.ErrUnavailable))
	})

	srv.Restart(t)
	within.Run(t, "the verification once etcd is back", func() {
		for {
			p, err := l2.Integrity()
			if err == nil {
				require.Nil(t, p, "the log is intact")
				return
			}
			require.True(t, errors.Is(err, store.ErrUnavailable), "%v", err)
			time.Sleep(50 * time.Millisecond)
		}
	})
	within.Run(t, "flush and close", func() {
		require.NoError(t, l2.Flush())
		require.NoError(t, l2.Close())
	})

	db3 := openEtcd(t, srv, prefix)
	rep, err := audit.Verify(db3, audit.VerifyOptions{Verifier: auditKey(t).Verifier()})
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Problem)
	rs, err := audit.List(db3, audit.Filter{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, rs, 61, "every receipt, those queued during the outage too (the write call's among them), once")
	l3, err := audit.Open(db3, audit.Options{Key: auditKey(t), Shared: true})
	require.NoError(t, err)
	p, err := l3.Integrity()
	require.NoError(t, err)
	require.Nil(t, p, "no failure was recorded in the shared log")
	require.NoError(t, l3.Close())
}

// A replica closed while etcd is still down gives up on its start-up
// verification: Close returns, commits nothing unverified, and tells
// those who wait for a commit that it did not happen.
func TestSharedAuditLogClosesWhileItsVerificationWaits(t *testing.T) {
	srv := etcdtest.Start(t)
	db := openEtcdTimeout(t, srv, "/audit-outage-close/", 300*time.Millisecond)
	l, err := audit.Open(db, audit.Options{Key: auditKey(t), Shared: true, VerifyDelay: time.Hour})
	require.NoError(t, err)
	srv.Stop()
	_, err = l.Integrity()
	require.True(t, errors.Is(err, store.ErrUnavailable), "%v", err)
	waited := make(chan error, 1)
	go func() {
		_, err := l.AppendSync(audit.Receipt{CallID: "sync", Tool: "t", Outcome: "ok", Timestamp: time.Now().UTC().Format(time.RFC3339Nano)})
		waited <- err
	}()
	within.Run(t, "close", func() { require.NoError(t, l.Close()) })
	within.Run(t, "the waiting append", func() {
		err := <-waited
		require.Error(t, err, "not committed")
		require.True(t, errors.Is(err, store.ErrUnavailable) || errors.Is(err, audit.ErrClosed), "%v", err)
	})
}
