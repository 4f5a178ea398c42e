package index

import (
	"context"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
)

// Compaction. Scorch's tiered merge policy leaves an index that has
// settled after a burst of writes (a seeded or rebuilt catalog, an import)
// in many segments: about twenty at 10,000 bundles. A search looks every
// query term up in every segment's dictionary and opens an iterator on
// each, so it pays for the segment count: merged into one, the same index
// answered the load tool's searches in 0.7× the time. Once updates have
// stopped for CompactQuiet, an index of more than compactMaxSegments file
// segments is therefore merged into one, in the background (searches and
// updates go on meanwhile). A merge rewrites the whole index, so the next
// one waits compactEvery or compactSpacing times as long as the last took,
// whichever is longer: writes a few seconds apart then cost at most a
// percent of a core, however large the catalog. A busy writer never leaves
// the index quiet and never pays for it.
const (
	// CompactQuiet is how long an index goes without updates before it is
	// compacted.
	CompactQuiet       = 2 * time.Second
	compactMaxSegments = 4
	compactEvery       = 30 * time.Second
	compactSpacing     = 100
)

// compactor schedules the merges of one Index.
type compactor struct {
	mu     sync.Mutex
	timer  *time.Timer
	last   time.Time     // when the last merge started
	took   time.Duration // how long it took
	closed bool
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// merges counts finished merges (tests).
	merges int
}

// compactQuiet is CompactQuiet, shortened by tests.
var compactQuiet = CompactQuiet

func (c *compactor) init() {
	c.ctx, c.cancel = context.WithCancel(context.Background())
}

// touched (re)starts the quiet period; after it, fire runs.
func (c *compactor) touched(fire func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.ctx == nil {
		return
	}
	wait := c.delay(time.Now())
	if c.timer != nil {
		c.timer.Stop()
	}
	c.timer = time.AfterFunc(wait, func() {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		c.wg.Add(1)
		c.mu.Unlock()
		defer c.wg.Done()
		fire()
	})
}

// delay is how long from now a check for fragmentation waits: the quiet
// period, or longer while the last merge is too recent. c.mu is held.
func (c *compactor) delay(now time.Time) time.Duration {
	wait := compactQuiet
	if next := c.last.Add(max(compactEvery, compactSpacing*c.took)); next.Sub(now) > wait {
		wait = next.Sub(now)
	}
	return wait
}

// stop cancels a pending or running merge; wait then waits for it to end
// (after the scorch index is closed, which makes a running merge return).
func (c *compactor) stop() {
	c.mu.Lock()
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
	}
	c.mu.Unlock()
	if c.cancel != nil {
		c.cancel()
	}
}

func (c *compactor) wait() { c.wg.Wait() }

// scheduleCompaction notes an update: the index is compacted once updates
// have been quiet for CompactQuiet.
func (ix *Index) scheduleCompaction() { ix.cmp.touched(ix.compactIfFragmented) }

// compactIfFragmented merges the index into one segment when it holds more
// than compactMaxSegments. It does not hold ix.mu while merging: Close
// closes the scorch index, which ends the merge.
func (ix *Index) compactIfFragmented() {
	ix.mu.RLock()
	sc := scorchOf(ix.bi)
	ix.mu.RUnlock()
	if sc == nil || fileSegments(sc) <= compactMaxSegments {
		return
	}
	start := time.Now()
	ix.cmp.mu.Lock()
	ix.cmp.last = start
	ix.cmp.mu.Unlock()
	// nil options: scorch's single-segment plan.
	err := sc.ForceMerge(ix.cmp.ctx, nil)
	ix.cmp.mu.Lock()
	ix.cmp.took = time.Since(start)
	if err == nil {
		ix.cmp.merges++
	}
	ix.cmp.mu.Unlock()
}

func fileSegments(sc *scorch.Scorch) uint64 {
	n, _ := sc.StatsMap()["num_root_filesegments"].(uint64)
	return n
}

// segments is the number of file segments at the index's root.
func (ix *Index) segments() uint64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if sc := scorchOf(ix.bi); sc != nil {
		return fileSegments(sc)
	}
	return 0
}
