package audit

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// Retention bounds the log; zero fields mean no bound.
type Retention struct {
	MaxAge   time.Duration
	MaxCount uint64
	// Floor is the per-tenant floor of the count bound: each tenant's
	// (scope's) newest Floor receipts are never removed by MaxCount, whatever
	// other tenants wrote; they stay below the signed retention base with
	// their inclusion proofs until MaxAge removes them. 0 is no floor.
	Floor uint64
}

// DefaultTenantFloor is the default Retention.Floor.
const DefaultTenantFloor = 1000

// DefaultRetention keeps 90 days and at most 100000 receipts, with each
// tenant's newest 1000 kept whatever the count.
var DefaultRetention = Retention{MaxAge: 90 * 24 * time.Hour, MaxCount: 100000, Floor: DefaultTenantFloor}

// ParseRetention reads ACCORDS_MCP_AUDIT_RETENTION: comma-separated bounds,
// each an age ("90d", "720h", "30m") or a count ("100000"); "off" keeps
// everything; "" is the default. A count comes with the default tenant
// floor (ParseFloor sets another).
func ParseRetention(s string) (Retention, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" {
		return DefaultRetention, nil
	}
	if s == "off" || s == "none" || s == "0" {
		return Retention{}, nil
	}
	r := Retention{Floor: DefaultTenantFloor}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, err := strconv.ParseUint(part, 10, 64); err == nil {
			if n == 0 {
				return r, fmt.Errorf("audit retention count must be positive, got %q", part)
			}
			r.MaxCount = n
			continue
		}
		d, err := parseAge(part)
		if err != nil || d <= 0 {
			return r, fmt.Errorf("audit retention %q: use an age such as 90d or 720h, a count such as 100000, or off", part)
		}
		r.MaxAge = d
	}
	return r, nil
}

// ParseFloor reads ACCORDS_MCP_AUDIT_TENANT_FLOOR: a receipt count, 0 for
// no floor; "" is DefaultTenantFloor.
func ParseFloor(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DefaultTenantFloor, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("audit tenant floor %q: use a receipt count such as 1000, or 0 for none", s)
	}
	return n, nil
}

func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		return time.Duration(n * float64(24*time.Hour)), err
	}
	return time.ParseDuration(s)
}

// PruneEvent is one retention pass that removed receipts.
type PruneEvent struct {
	// From..To is the stretch the start of the log moved over; Kept
	// receipts stay below the new base under the tenant floor.
	From, To uint64
	// Removed by each bound; Dropped were kept under the floor before.
	ByCount, ByAge, Dropped int
	Kept                    int
	MaxCount, Floor         uint64
}

// Removed is every receipt the pass removed.
func (e PruneEvent) Removed() int { return e.ByCount + e.ByAge + e.Dropped }

// prune removes receipts beyond the retention bounds, oldest first, in
// transactions that each examine at most pruneLimit receipts and sign a
// retention base at the new start. Nothing is pruned while a verification
// failure stands.
func (l *Log) prune() (int, error) {
	ret := l.opts.Retention
	if (ret.MaxAge <= 0 && ret.MaxCount == 0) || l.problem.Load() != nil {
		return 0, nil
	}
	if !l.prunable(ret) {
		return 0, nil // no write transaction: the file stays as it was
	}
	ev := PruneEvent{MaxCount: ret.MaxCount, Floor: ret.Floor}
	var err error
	for {
		var r chunkResult
		r, err = l.pruneChunk(ret)
		if r.changed {
			if ev.From == 0 {
				ev.From = r.from
			}
			ev.To = r.to
			ev.ByCount += r.byCount
			ev.ByAge += r.byAge
			ev.Dropped += r.dropped
			ev.Kept = r.kept
		}
		if err != nil || !r.changed || r.examined < l.pruneLimit() {
			break
		}
	}
	if ev.Removed() > 0 && l.opts.OnPrune != nil {
		l.opts.OnPrune(ev)
	}
	return ev.Removed(), err
}

const pruneChunk = 5000

// prunable reports, reading only, whether retention would remove the
// oldest receipt or one kept under the tenant floor now.
func (l *Log) prunable(ret Retention) bool {
	count := l.head.Seq - l.base.Size
	if l.opts.Shared || (ret.MaxCount > 0 && count > ret.MaxCount) {
		return true // a shared log's head may be stale: pruneChunk reads it
	}
	if ret.MaxAge <= 0 {
		return false
	}
	cutoff := l.opts.Now().UTC().Add(-ret.MaxAge)
	old := false
	_ = l.db.View(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil || b.receipts == nil {
			old = true // let pruneChunk report it
			return nil
		}
		c := b.receipts.Cursor()
		if k, v := c.First(); k != nil && u64(k) <= l.base.Size {
			old = olderThan(peek(v).Timestamp, cutoff) // kept under the floor
		}
		if k, v := c.Seek(store.U64(l.base.Size + 1)); k != nil && !old {
			old = olderThan(peek(v).Timestamp, cutoff)
		}
		return nil
	})
	return old
}

// A shared log's pruning transaction stays under etcd's 128 operations: at
// most sharedPruneChunk receipts examined (each a deletion and about two
// tree hashes) and sharedFloorDrops formerly kept ones removed.
const (
	sharedPruneChunk = 16
	sharedFloorDrops = 1
)

func (l *Log) pruneLimit() int {
	if l.opts.Shared {
		return sharedPruneChunk
	}
	return pruneChunk
}

// retentionText begins a retention base's note (BaseInfo reads it back).
const retentionText = "retention removed receipts %d..%d: %d by the count bound, %d by the age bound"

// chunkResult is what one pruning transaction did.
type chunkResult struct {
	changed                 bool
	examined                int
	from, to                uint64
	byCount, byAge, dropped int
	kept                    int
}

func (l *Log) pruneChunk(ret Retention) (chunkResult, error) {
	var cutoff time.Time
	if ret.MaxAge > 0 {
		cutoff = l.opts.Now().UTC().Add(-ret.MaxAge)
	}
	var res chunkResult
	var newBase Base
	var tenants map[string]uint64
	err := l.db.Update(func(tx store.Tx) error {
		res = chunkResult{}
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		if l.opts.Shared {
			l.knownRev = 0 // a retention base changes what the last commit left
			if err := l.syncShared(b); err != nil {
				return err
			}
		}
		start := l.base.Size // receipts 1..start are gone, but for those kept
		var last uint64      // the cut: receipts after the base beyond a bound
		c := b.receipts.Cursor()
		for k, v := c.Seek(store.U64(start + 1)); k != nil && res.examined < l.pruneLimit(); k, v = c.Next() {
			seq := u64(k)
			overCount := ret.MaxCount > 0 && seq <= l.head.Seq && l.head.Seq-seq >= ret.MaxCount
			if !overCount && (cutoff.IsZero() || !olderThan(peek(v).Timestamp, cutoff)) {
				break
			}
			last = seq
			res.examined++
		}
		cut := max(last, start)
		plan := l.planKeep(b, ret, cutoff, start, cut)
		if last == 0 && plan.dropped == 0 {
			return nil
		}
		res.changed = true
		res.from, res.to = start+1, cut
		res.byCount, res.byAge, res.dropped, res.kept = plan.byCount, plan.byAge, plan.dropped, len(plan.keep)
		newBase, tenants, err = l.cutTo(b, plan, start, last, cut)
		return err
	})
	if err != nil {
		return chunkResult{}, fmt.Errorf("prune audit log: %w", err)
	}
	if res.changed {
		l.base = newBase
		l.tenants = tenants
		if l.lastCP < newBase.Size {
			l.lastCP = newBase.Size
		}
	}
	return res, nil
}

// cutTo moves the start of the log to cut as plan says: it signs the
// retention base, removes the receipts, tree hashes, checkpoints and bases
// nothing needs any more, and returns the base and the counts by scope.
func (l *Log) cutTo(b buckets, plan keepPlan, start, last, cut uint64) (Base, map[string]uint64, error) {
	chain, root := l.base.Chain, l.base.Root
	if last > start {
		raw := b.receipts.Get(store.U64(last))
		chain = peek(raw).Hash
		frontier, err := loadRange(b.tree, last)
		if err != nil {
			return Base{}, nil, fmt.Errorf("prune: %w", err)
		}
		root = rootOf(frontier)
	}
	text := fmt.Sprintf(retentionText, start+1, cut, plan.byCount, plan.byAge)
	if last == 0 {
		text = "retention removed receipts kept under the tenant floor"
	}
	if plan.dropped > 0 {
		text += fmt.Sprintf(", %d kept under the tenant floor before", plan.dropped)
	}
	text += keptMarker(plan.keep)
	newBase, err := signBase(l.key, Base{Origin: l.origin, Kind: BaseRetention, Size: cut, Root: root,
		Chain: chain, Time: l.opts.Now(), Text: text})
	if err != nil {
		return Base{}, nil, err
	}
	for _, seq := range plan.remove {
		if err := b.receipts.Delete(store.U64(seq)); err != nil {
			return Base{}, nil, err
		}
	}
	keep := map[uint64]bool{}
	for _, id := range frontierIDs(cut) {
		keep[nodeKey(id)] = true
	}
	for _, seq := range plan.keep {
		for _, id := range keptPathIDs(seq, cut) {
			keep[nodeKey(id)] = true
		}
	}
	if err := deleteKeys(b.tree, 0, leafKey(cut), keep); err != nil {
		return Base{}, nil, err
	}
	if err := deleteKeys(b.checkpoints, 0, cut+1, nil); err != nil {
		return Base{}, nil, err
	}
	if err := deleteKeys(b.bases, 0, cut+1, nil); err != nil {
		return Base{}, nil, err
	}
	tenants := maps.Clone(l.tenants)
	if tenants == nil {
		tenants = map[string]uint64{}
	}
	for scope, n := range plan.gone {
		if tenants[scope] <= n {
			delete(tenants, scope)
		} else {
			tenants[scope] -= n
		}
	}
	if err := store.PutJSON(b.root, keyTenants, tenants); err != nil {
		return Base{}, nil, err
	}
	return newBase, tenants, b.bases.Put(store.U64(cut), newBase.Signed)
}

// olderThan reports whether the RFC 3339 timestamp ts is before cutoff.
func olderThan(ts string, cutoff time.Time) bool {
	t, err := time.Parse(time.RFC3339Nano, ts)
	return err == nil && t.Before(cutoff)
}
