// Package resident keeps the file-backed part of the process's resident
// set within a budget. The database, the search index and the executable
// are mapped into memory, and the kernel maps every page read, with its
// neighbours (fault-around maps 64 KiB for one 4 KiB read), into the
// process for good: a server that reads a random cookbook now and then
// ends up with its whole database file counted in its RSS. Those pages are
// the kernel's page cache; the process only maps them. When the mapped
// pages exceed the budget, the governor unmaps them (madvise
// MADV_DONTNEED, which for a shared or unmodified file mapping drops the
// mapping, never the data): the page cache keeps them, the next read maps
// the page again with a minor fault, and what the process keeps mapped is
// what it has used since.
package resident

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Range is mapped memory a Source may release: Len bytes at Addr, a
// mapping of a file that the process never writes through.
type Range struct {
	Addr uintptr
	Len  int
}

// A Source calls release for each Range it may release, while it keeps
// them mapped (a read transaction, an index snapshot): nothing may unmap
// or remap them before it returns.
type Source func(release func(Range)) error

// Options tune a Governor.
type Options struct {
	// Budget is the file-backed resident set (RssFile) above which the
	// sources are released.
	Budget int64
	// Every is how often the resident set is read (default 25ms; reading
	// it costs microseconds).
	Every time.Duration
	// MinGap is the shortest time between two releases (default 100ms), so
	// that a working set larger than the budget costs at most ten
	// releases a second.
	MinGap time.Duration
	// OnError is told of a source's error (the governor goes on).
	OnError func(source string, err error)
}

type named struct {
	name string
	src  Source
}

// Governor releases its sources' mappings whenever the process's
// file-backed resident set exceeds the budget.
type Governor struct {
	opts    Options
	mu      sync.Mutex // guards sources: Add may come after Run
	sources []named
	// readRSS and release are the operating system's (tests replace them).
	readRSS func() (int64, error)
	release func(Range) error
	trims   atomic.Int64
	freed   atomic.Int64
}

// New makes a governor; Add its sources, then Run it.
func New(opts Options) *Governor {
	if opts.Every <= 0 {
		opts.Every = 25 * time.Millisecond
	}
	if opts.MinGap <= 0 {
		opts.MinGap = 100 * time.Millisecond
	}
	return &Governor{opts: opts, readRSS: FileResident, release: release}
}

// Add adds a source; Run may already be running (a process starts the
// governor before it opens what it maps, which it reads while opening).
func (g *Governor) Add(name string, src Source) {
	g.mu.Lock()
	g.sources = append(g.sources, named{name, src})
	g.mu.Unlock()
}

// Trims is how many times the sources were released, and Freed the
// file-backed resident bytes those releases took off.
func (g *Governor) Trims() int64 { return g.trims.Load() }

// Freed: see Trims.
func (g *Governor) Freed() int64 { return g.freed.Load() }

// Run watches the resident set until ctx ends. It returns at once where
// the resident set cannot be read (an operating system without
// /proc/self/status) or the budget is off.
func (g *Governor) Run(ctx context.Context) {
	if _, err := g.readRSS(); err != nil || g.opts.Budget <= 0 {
		return
	}
	t := time.NewTicker(g.opts.Every)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rss, err := g.readRSS(); err != nil || rss <= g.opts.Budget || time.Since(last) < g.opts.MinGap {
			continue
		}
		g.Trim()
		last = time.Now()
	}
}

// Trim releases every source now.
func (g *Governor) Trim() {
	g.mu.Lock()
	sources := g.sources
	g.mu.Unlock()
	before, _ := g.readRSS()
	for _, s := range sources {
		err := s.src(func(r Range) {
			if r.Len > 0 {
				_ = g.release(r)
			}
		})
		if err != nil && g.opts.OnError != nil {
			g.opts.OnError(s.name, err)
		}
	}
	after, _ := g.readRSS()
	g.trims.Add(1)
	if before > after {
		g.freed.Add(before - after)
	}
}
