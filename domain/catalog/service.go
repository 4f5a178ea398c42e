package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/store"
)

// Options configure Open.
type Options struct {
	Logger *slog.Logger
	// Progress receives rebuild progress when Open has to rebuild.
	Progress index.Progress
	// MaxBundleBytes caps a stored bundle's canonical JSON
	// (DefaultMaxBundleBytes when <= 0).
	MaxBundleBytes int64
	// BackgroundRebuild makes Open return before a needed rebuild is done
	// (searches wait for it, writes commit); without it Open rebuilds first.
	BackgroundRebuild bool

	// buildHook (tests) runs inside a background rebuild once its snapshot
	// is taken, before the build; an error aborts the rebuild.
	buildHook func(ctx context.Context) error
}

// OpenReport says what Open did with the index.
type OpenReport struct {
	Rebuilt bool   `json:"rebuilt"`
	Reason  string `json:"reason,omitempty"`
	// Background says the rebuild runs on after Open returned (Rev is
	// then 0: there is no index yet).
	Background bool   `json:"background,omitempty"`
	CaughtUp   int    `json:"caught_up_revisions,omitempty"`
	Rev        uint64 `json:"rev"`
}

// Service is the catalog: bundles in bbolt, entries in the bleve index.
// It is safe for concurrent use.
type Service struct {
	db             *store.DB
	indexPath      string
	logger         *slog.Logger
	maxBundleBytes int64

	// commitMu serialises commits so index updates queue in revision order;
	// writeMu serialises index changes.
	commitMu sync.Mutex
	writeMu  sync.Mutex
	// queueMu guards queued (committed groups whose index update waits) and
	// indexing (a goroutine applies them); indexers tracks that goroutine.
	queueMu  sync.Mutex
	queued   []groupTx
	indexing bool
	indexers sync.WaitGroup
	// groupMu guards group (writes waiting to be committed together) and
	// leading (a caller is committing).
	groupMu sync.Mutex
	group   []*writeReq
	leading bool
	// grouped counts commits that held more than one write; beforeCommit
	// (tests) runs before each commit.
	grouped      atomic.Int64
	beforeCommit func()
	// beforeIndex (tests) runs before each index update.
	beforeIndex atomic.Pointer[func()]
	// idxMu guards idx, which Reindex swaps.
	idxMu sync.RWMutex
	idx   *index.Index

	// background and buildHook are Open's options of the same names.
	background bool
	buildHook  func(ctx context.Context) error
	// buildMu serialises index builds. bgMu guards bg (the running background
	// rebuild), bgErr (how the last ended) and closed; rebuilding mirrors
	// bg != nil for the write path.
	buildMu    sync.Mutex
	bgMu       sync.Mutex
	bg         *rebuild
	bgErr      error
	closed     bool
	rebuilding atomic.Bool
	bgDone     sync.WaitGroup

	// stopFollow ends the watch Follow started.
	stopFollow atomic.Pointer[context.CancelFunc]

	storeRev atomic.Uint64
	indexRev atomic.Uint64
	report   OpenReport
}

// Open opens the catalog on db with its index at indexPath, rebuilding or
// catching the index up when it is missing, corrupt, ahead or behind (D8).
func Open(ctx context.Context, db *store.DB, indexPath string, opts Options) (*Service, error) {
	s := &Service{db: db, indexPath: indexPath, logger: opts.Logger, maxBundleBytes: opts.MaxBundleBytes,
		background: opts.BackgroundRebuild, buildHook: opts.buildHook}
	if s.maxBundleBytes <= 0 {
		s.maxBundleBytes = DefaultMaxBundleBytes
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if err := db.Update(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		s.storeRev.Store(readU64(root.Get(keyRev)))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("open catalog: %w", err)
	}
	if err := s.packStored(ctx); err != nil {
		return nil, err
	}
	rep, err := s.syncIndex(ctx, opts.Progress, s.background)
	if err != nil {
		return nil, err
	}
	s.report = rep
	return s, nil
}

// Reopen closes the index and opens the catalog again as Open does (after a
// restore swapped the file); the rebuild is done before it returns. The
// caller holds every other call off meanwhile.
func (s *Service) Reopen(ctx context.Context) (OpenReport, error) {
	if err := s.Close(); err != nil {
		s.logger.Warn("closing the catalog index before reopening", "error", err.Error())
	}
	s.bgMu.Lock()
	s.closed = false
	s.bgMu.Unlock()
	if err := s.db.Update(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		s.storeRev.Store(readU64(root.Get(keyRev)))
		return nil
	}); err != nil {
		return OpenReport{}, fmt.Errorf("reopen catalog: %w", err)
	}
	s.indexRev.Store(0)
	if err := s.packStored(ctx); err != nil {
		return OpenReport{}, err
	}
	rep, err := s.syncIndex(ctx, nil, false)
	if err != nil {
		return OpenReport{}, err
	}
	s.report = rep
	return rep, nil
}

// Report says what Open did with the index.
func (s *Service) Report() OpenReport { return s.report }

// DBPath is the database file (reported as root_dir by list).
func (s *Service) DBPath() string { return s.db.Path() }

// IndexPath is the index folder.
func (s *Service) IndexPath() string { return s.indexPath }

// Rev is the current catalog revision.
func (s *Service) Rev() uint64 { return s.storeRev.Load() }

// IndexRev is the catalog revision the index reflects.
func (s *Service) IndexRev() uint64 { return s.indexRev.Load() }

// Close cancels a background rebuild, applies queued index updates and
// closes the index (the database belongs to the caller).
func (s *Service) Close() error {
	if stop := s.stopFollow.Swap(nil); stop != nil {
		(*stop)()
	}
	s.bgMu.Lock()
	s.closed = true
	if s.bg != nil {
		s.bg.cancel()
	}
	s.bgMu.Unlock()
	s.bgDone.Wait()
	s.indexers.Wait()
	s.writeMu.Lock()
	s.applyQueuedLocked(context.Background())
	s.writeMu.Unlock()
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.idx == nil {
		return nil
	}
	err := s.idx.Close()
	s.idx = nil
	return err
}
