package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Fleet is this replica's entry in the membership list of replicas sharing
// an etcd store: a key under "members/" held by a kept-alive lease, gone at
// most FleetTTL after the replica stops. When the lease lapses under a live
// replica (etcd stalled), it registers again as soon as etcd answers and
// OnRejoin hooks re-claim its work; meanwhile State says it is not
// registered, Claim refuses and Live keeps its count. State answers from
// memory (probed every FleetProbe).
type Fleet struct {
	db     *DB
	cli    *clientv3.Client
	id     string
	prefix string
	logger *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	sess     *concurrency.Session // nil while re-registering
	onRejoin []func()

	live atomic.Int64
	// floor is the count Live does not go below while unregistered and until
	// floorUntil (unix ns) after registering again.
	floor, floorUntil atomic.Int64
	registered        atomic.Bool
	// contact is when etcd last answered (unix ns), rev the revision it
	// answered with.
	contact, rev atomic.Int64
}

// FleetTTL is the membership lease: how long a killed replica still
// counts as live.
const FleetTTL = 10 * time.Second

// FleetProbe is how often etcd is probed; FleetStale without an answer
// makes State say it is unreachable.
const (
	FleetProbe = time.Second
	FleetStale = 3 * time.Second
)

// FleetRejoin bounds how long a live replica whose lease lapsed takes to
// register again once etcd answers.
const FleetRejoin = 5 * time.Second

const (
	fleetAttempt = 2 * time.Second
	fleetRetry   = 250 * time.Millisecond
	fleetRequest = 5 * time.Second
)

// FleetOptions tune JoinFleet.
type FleetOptions struct {
	// Logger hears of a lapsed and restored membership and of etcd not
	// answering (nil: not logged).
	Logger *slog.Logger
}

// JoinFleet registers this replica as id and follows the membership list.
// On bbolt there is one replica: the result counts 1 and needs no Leave.
func (db *DB) JoinFleet(id string, o FleetOptions) (*Fleet, error) {
	f := &Fleet{id: id, logger: o.Logger}
	f.live.Store(1)
	f.registered.Store(true)
	f.contact.Store(time.Now().UnixNano())
	if f.logger == nil {
		f.logger = slog.New(slog.DiscardHandler)
	}
	if db.etcd == nil {
		return f, nil
	}
	f.db, f.cli, f.prefix = db, db.etcd.Client(), db.etcd.Prefix()
	f.ctx, f.cancel = context.WithCancel(context.Background())
	sess, err := f.register(clientv3.NoLease)
	if err != nil {
		f.cancel()
		return nil, fmt.Errorf("join the replica fleet: %w", ErrUnavailableWrap(err))
	}
	pfx := f.prefix + "members/"
	rev := f.count(f.ctx, pfx, 0)
	if afterFleetCount != nil {
		afterFleetCount()
	}
	f.wg.Go(func() { f.follow(pfx, rev) })
	f.wg.Go(func() { f.keep(sess) })
	f.wg.Go(f.probe)
	return f, nil
}

// afterFleetCount runs between JoinFleet's first count and its watch
// (tests: a replica joining in that gap).
var afterFleetCount func()

// register grants a lease, keeps it alive and puts this replica's member
// key on it, within fleetAttempt.
func (f *Fleet) register(lapsed clientv3.LeaseID) (*concurrency.Session, error) {
	ctx, cancel := context.WithTimeout(f.ctx, fleetAttempt)
	defer cancel()
	g, err := f.cli.Grant(ctx, int64(FleetTTL/time.Second))
	if err != nil {
		return nil, err
	}
	// The session's keep-alives run until Leave (f.ctx), not until this
	// attempt's deadline.
	sess, err := concurrency.NewSession(f.cli, concurrency.WithLease(g.ID), concurrency.WithContext(f.ctx))
	if err == nil {
		_, err = f.cli.Put(ctx, f.prefix+"members/"+f.id, time.Now().UTC().Format(time.RFC3339), clientv3.WithLease(g.ID))
	}
	if err != nil {
		if sess != nil {
			sess.Orphan()
		}
		f.revoke(g.ID)
		return nil, err
	}
	f.mu.Lock()
	f.sess = sess
	hooks := f.onRejoin
	f.mu.Unlock()
	f.contact.Store(time.Now().UnixNano())
	if lapsed != clientv3.NoLease {
		// The hooks move their claims onto the new lease; then the lapsed lease
		// is revoked.
		for _, fn := range hooks {
			fn()
		}
		f.revoke(lapsed)
	}
	return sess, nil
}

// revoke revokes a lease, best effort (it expires by itself anyway).
func (f *Fleet) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), fleetAttempt)
	defer cancel()
	_, _ = f.cli.Revoke(ctx, id)
}

// keep watches the session and registers again when its lease lapses,
// retrying until etcd answers or Leave.
func (f *Fleet) keep(sess *concurrency.Session) {
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-sess.Done():
		}
		if f.ctx.Err() != nil {
			return
		}
		lapsed := time.Now()
		f.floor.Store(int64(f.Live()))
		f.mu.Lock()
		f.sess = nil
		f.mu.Unlock()
		f.registered.Store(false)
		f.logger.Warn("fleet membership lost: the etcd lease expired (etcd did not answer for "+FleetTTL.String()+"); registering again",
			"replica", f.id, "counted_replicas", f.Live())
		for {
			next, err := f.register(sess.Lease())
			if err == nil {
				sess = next
				break
			}
			select {
			case <-f.ctx.Done():
				return
			case <-time.After(fleetRetry):
			}
		}
		f.floorUntil.Store(time.Now().Add(FleetTTL).UnixNano())
		f.registered.Store(true)
		f.logger.Info("fleet membership restored", "replica", f.id, "lapsed_ms", time.Since(lapsed).Milliseconds())
	}
}

// follow keeps the member count current: a watch of the list from the
// revision counted, counted again at every change.
func (f *Fleet) follow(pfx string, rev int64) {
	ctx := f.ctx
	for ctx.Err() == nil {
		// Watch from right after the counted revision, so no change between count
		// and watch is missed.
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev+1))
		}
		for resp := range f.cli.Watch(ctx, pfx, opts...) {
			if resp.Err() != nil {
				break // compacted past rev, or the connection broke
			}
			rev = f.count(ctx, pfx, rev)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			rev = f.count(ctx, pfx, rev) // after a broken watch
		}
	}
}

// probe asks etcd for its revision every FleetProbe and logs when etcd
// stops and starts answering.
func (f *Fleet) probe() {
	tick := time.NewTicker(FleetProbe)
	defer tick.Stop()
	silent := false
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(f.ctx, FleetProbe)
		rev, err := f.db.etcd.Revision(ctx)
		cancel()
		switch {
		case err == nil:
			f.contact.Store(time.Now().UnixNano())
			f.rev.Store(rev)
			if silent {
				silent = false
				f.logger.Info("etcd answers again", "replica", f.id)
			}
		case !silent && !f.State().Reachable:
			silent = true
			f.logger.Warn("etcd is not answering: write tools are refused until it does", "replica", f.id, "error", err.Error())
		}
	}
}

// count reads how many members the list holds and returns the revision it
// read at (last when the read failed, and the last count stays).
func (f *Fleet) count(ctx context.Context, pfx string, last int64) int64 {
	ctx, cancel := context.WithTimeout(ctx, fleetRequest)
	defer cancel()
	resp, err := f.cli.Get(ctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return last
	}
	f.contact.Store(time.Now().UnixNano())
	f.rev.Store(resp.Header.Revision)
	f.live.Store(max(resp.Count, 1))
	return resp.Header.Revision
}

// Live is the number of replicas with a live lease (at least 1). While this
// replica's lease has lapsed, and for FleetTTL after, it is at least the
// count before the lapse: a replica counting itself alone would admit the
// whole of every rate limit.
func (f *Fleet) Live() int {
	if f == nil {
		return 1
	}
	n := f.live.Load()
	if !f.registered.Load() || time.Now().UnixNano() < f.floorUntil.Load() {
		n = max(n, f.floor.Load())
	}
	return int(max(n, 1))
}

// FleetState is what a replica knows of etcd and of its own membership,
// without asking etcd.
type FleetState struct {
	// Registered: this replica's membership lease is alive (false while
	// it registers again after a lapse).
	Registered bool
	// Reachable: etcd answered within FleetStale.
	Reachable bool
	// LastContact is when etcd last answered, Revision the revision it
	// answered with (0 before the first probe).
	LastContact time.Time
	Revision    int64
	// Live is Live().
	Live int
}

// State reads the fleet's last knowledge (no request: a health check
// answers at once while etcd hangs).
func (f *Fleet) State() FleetState {
	if f == nil {
		return FleetState{Registered: true, Reachable: true, Live: 1}
	}
	contact := time.Unix(0, f.contact.Load())
	return FleetState{
		Registered:  f.registered.Load(),
		Reachable:   time.Since(contact) < FleetStale,
		LastContact: contact,
		Revision:    f.rev.Load(),
		Live:        f.Live(),
	}
}

// OnRejoin adds fn to what runs after re-registering, before the lapsed
// lease is revoked (to Claim again).
func (f *Fleet) OnRejoin(fn func()) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.onRejoin = append(f.onRejoin, fn)
	f.mu.Unlock()
}

// ID is this replica's name in the list.
func (f *Fleet) ID() string { return f.id }

// Leave removes this replica from the list at once (revoking its lease).
func (f *Fleet) Leave() {
	if f == nil || f.cli == nil {
		return
	}
	f.cancel()
	f.wg.Wait()
	f.mu.Lock()
	sess := f.sess
	f.sess = nil
	f.mu.Unlock()
	if sess != nil {
		sess.Orphan()
		f.revoke(sess.Lease())
	}
}

// ErrUnavailableWrap marks err as the store being out of reach.
func ErrUnavailableWrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// FleetMembers counts the replicas registered on the etcd store (0 on
// bbolt); with none, it watches for quiet more, so a replica about to
// re-register is not missed.
func (db *DB) FleetMembers(ctx context.Context, quiet time.Duration) (int64, error) {
	if db.etcd == nil {
		return 0, nil
	}
	cli, pfx := db.etcd.Client(), db.etcd.Prefix()+"members/"
	rctx, cancel := context.WithTimeout(ctx, fleetRequest)
	resp, err := cli.Get(rctx, pfx, clientv3.WithPrefix(), clientv3.WithCountOnly())
	cancel()
	if err != nil {
		return 0, ErrUnavailableWrap(err)
	}
	if resp.Count > 0 || quiet <= 0 {
		return resp.Count, nil
	}
	wctx, cancel := context.WithTimeout(ctx, quiet)
	defer cancel()
	// From the revision counted: a registration between the count and
	// the watch is seen too.
	for wr := range cli.Watch(clientv3.WithRequireLeader(wctx), pfx, clientv3.WithPrefix(),
		clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterDelete()) {
		if len(wr.Events) > 0 {
			return int64(len(wr.Events)), nil
		}
		if err := wr.Err(); err != nil && wctx.Err() == nil {
			return 0, ErrUnavailableWrap(err)
		}
	}
	if ctx.Err() != nil {
		return 0, ErrUnavailableWrap(ctx.Err())
	}
	return 0, nil
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

// Claim makes this replica the one doing the work named name while its
// lease lives: true when it holds the claim. A dead replica's claims lapse
// with its lease and go to another's next Claim; claims on a lapsed lease
// of this replica move to the current one; while lapsed it claims nothing.
// On bbolt every claim succeeds.
func (f *Fleet) Claim(name string) bool {
	if f == nil || f.cli == nil {
		return true
	}
	f.mu.Lock()
	sess := f.sess
	f.mu.Unlock()
	if sess == nil {
		return false
	}
	lease := sess.Lease()
	key := f.claimKey(name)
	ctx, cancel := context.WithTimeout(f.ctx, fleetRequest)
	defer cancel()
	resp, err := f.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, f.id, clientv3.WithLease(lease))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil {
		return false
	}
	if resp.Succeeded {
		return true
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) != 1 || string(kvs[0].Value) != f.id {
		return false
	}
	if clientv3.LeaseID(kvs[0].Lease) == lease {
		return true
	}
	moved, err := f.cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision)).
		Then(clientv3.OpPut(key, f.id, clientv3.WithLease(lease))).Commit()
	return err == nil && moved.Succeeded
}

// Release gives up a claim of this replica.
func (f *Fleet) Release(name string) {
	if f == nil || f.cli == nil {
		return
	}
	key := f.claimKey(name)
	ctx, cancel := context.WithTimeout(f.ctx, fleetRequest)
	defer cancel()
	_, _ = f.cli.Txn(ctx).If(clientv3.Compare(clientv3.Value(key), "=", f.id)).Then(clientv3.OpDelete(key)).Commit()
}

func (f *Fleet) claimKey(name string) string { return f.prefix + "claims/" + name }
