package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Fleet is this replica's entry in the membership list of the replicas
// sharing an etcd store: a key under "members/" held by a lease that the
// replica keeps alive. A replica that stops or is killed drops out when
// its lease expires (at most FleetTTL later).
type Fleet struct {
	sess   *concurrency.Session
	cancel context.CancelFunc
	live   atomic.Int64
	id     string
	prefix string
}

// FleetTTL is the membership lease: how long a killed replica still
// counts as live.
const FleetTTL = 10 * time.Second

// JoinFleet registers this replica as id and follows the membership list.
// On bbolt there is one replica: the result counts 1 and needs no Leave.
func (db *DB) JoinFleet(id string) (*Fleet, error) {
	f := &Fleet{id: id}
	f.live.Store(1)
	if db.etcd == nil {
		return f, nil
	}
	cli := db.etcd.Client()
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(FleetTTL/time.Second)))
	if err != nil {
		return nil, fmt.Errorf("join the replica fleet: %w", ErrUnavailableWrap(err))
	}
	pfx := db.etcd.Prefix() + "members/"
	ctx, cancel := context.WithCancel(context.Background())
	f.sess, f.cancel, f.prefix = sess, cancel, db.etcd.Prefix()
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = cli.Put(pctx, pfx+id, time.Now().UTC().Format(time.RFC3339), clientv3.WithLease(sess.Lease()))
	pcancel()
	if err != nil {
		f.Leave()
		return nil, fmt.Errorf("join the replica fleet: %w", ErrUnavailableWrap(err))
	}
	rev := f.count(ctx, cli, pfx, 0)
	if afterFleetCount != nil {
		afterFleetCount()
	}
	go func() {
		for ctx.Err() == nil {
			// The watch starts right after the revision counted, so a
			// replica that joins or leaves between the count and the
			// watch is not missed (a watch from "now" would miss it, and
			// the count would stay wrong until the next change).
			opts := []clientv3.OpOption{clientv3.WithPrefix()}
			if rev > 0 {
				opts = append(opts, clientv3.WithRev(rev+1))
			}
			for resp := range cli.Watch(ctx, pfx, opts...) {
				if resp.Err() != nil {
					break // compacted past rev, or the connection broke
				}
				rev = f.count(ctx, cli, pfx, rev)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
				rev = f.count(ctx, cli, pfx, rev) // after a broken watch
			}
		}
	}()
	return f, nil
}

// afterFleetCount runs between JoinFleet's first count and its watch
// (tests: a replica joining in that gap).
var afterFleetCount func()

// count reads how many members the list holds and returns the revision it
// read at (last when the read failed, and the last count stays).
func (f *Fleet) count(ctx context.Context, cli *clientv3.Client, pfx string, last int64) int64 {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return last
	}
	f.live.Store(max(resp.Count, 1))
	return resp.Header.Revision
}

// Live is the number of replicas whose membership lease is alive, this
// one included (at least 1).
func (f *Fleet) Live() int {
	if f == nil {
		return 1
	}
	return int(f.live.Load())
}

// ID is this replica's name in the list.
func (f *Fleet) ID() string { return f.id }

// Leave removes this replica from the list at once (revoking its lease).
func (f *Fleet) Leave() {
	if f == nil || f.sess == nil {
		return
	}
	f.cancel()
	_ = f.sess.Close()
}

// ErrUnavailableWrap marks err as the store being out of reach.
func ErrUnavailableWrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// Status describes an etcd store for doctor: the cluster's revision and
// size, this deployment's keys and its live replicas.
type Status struct {
	Endpoint  string
	Revision  int64
	Keys      int64
	Replicas  int64
	DBSize    int64
	Leader    bool
	ServerVer string
}

// EtcdStatus reads the Status (nil, nil on bbolt).
func (db *DB) EtcdStatus(ctx context.Context) (*Status, error) {
	if db.etcd == nil {
		return nil, nil
	}
	cli := db.etcd.Client()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st := &Status{Endpoint: cli.Endpoints()[0]}
	sr, err := cli.Status(ctx, st.Endpoint)
	if err != nil {
		return nil, ErrUnavailableWrap(err)
	}
	st.Revision, st.DBSize, st.ServerVer = sr.Header.Revision, sr.DbSize, sr.Version
	st.Leader = sr.Leader != 0
	pfx := db.etcd.Prefix()
	keys, err := cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, ErrUnavailableWrap(err)
	}
	st.Keys = keys.Count
	members, err := cli.Get(ctx, pfx+"members/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, ErrUnavailableWrap(err)
	}
	st.Replicas = members.Count
	return st, nil
}

// Claim makes this replica the one that does the work named name (follow
// a task) for as long as it lives: true when it holds the claim, now or
// already. The claim is held by the replica's membership lease, so a
// replica that dies gives up its claims when the lease expires and
// another replica's next Claim takes them over. On bbolt (one process)
// every claim succeeds.
func (f *Fleet) Claim(name string) bool {
	if f == nil || f.sess == nil {
		return true
	}
	cli := f.sess.Client()
	key := f.claimKey(name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, f.id, clientv3.WithLease(f.sess.Lease()))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return false
	}
	if resp.Succeeded {
		return true
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	return len(kvs) == 1 && string(kvs[0].Value) == f.id
}

// Release gives up a claim of this replica.
func (f *Fleet) Release(name string) {
	if f == nil || f.sess == nil {
		return
	}
	key := f.claimKey(name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = f.sess.Client().Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", f.id)).Then(clientv3.OpDelete(key)).Commit()
}

func (f *Fleet) claimKey(name string) string { return f.prefix + "claims/" + name }
