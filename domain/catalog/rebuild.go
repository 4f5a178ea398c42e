package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/accordsai/accords-mcp/index"
)

// A rebuild at start can take minutes on a large catalog. With
// Options.BackgroundRebuild it runs here, so the server answers meanwhile:
// the build reads one snapshot without the write lock and takes the lock
// only to swap the index in and catch it up over the change log. Reads
// that need the index wait for it; others never do.

// rebuild is one background rebuild.
type rebuild struct {
	cancel context.CancelFunc
	done   chan struct{}
	// err is set before done is closed; superseded says a synchronous rebuild
	// took its place, whose outcome the waiters then wait for.
	err        error
	superseded bool
}

// ErrIndexRebuilding is what IndexStats returns while a background rebuild
// runs.
var ErrIndexRebuilding = errors.New("catalog index is being rebuilt in the background; searches wait for it")

var errIndexClosed = errors.New("catalog index is closed")

// maxRebuildRounds bounds restarts of a background rebuild outrun by the
// change log; the last round's index is then repaired by the next search.
const maxRebuildRounds = 3

// Rebuilding reports whether a background rebuild is running.
func (s *Service) Rebuilding() bool { return s.rebuilding.Load() }

// WaitIndex waits until no background rebuild runs or ctx ends; with no
// index then, it returns why the last rebuild failed.
func (s *Service) WaitIndex(ctx context.Context) error {
	if err := s.awaitRebuild(ctx); err != nil {
		return err
	}
	if s.hasIndex() {
		return nil
	}
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgErr == nil {
		return errIndexClosed
	}
	return s.bgErr
}

func (s *Service) hasIndex() bool {
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	return s.idx != nil
}

func (s *Service) isClosed() bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	return s.closed
}

// retireIndexLocked closes the index and moves its folder aside before a
// background rebuild, so a crash cannot leave it for a later start to take
// as valid.
func (s *Service) retireIndexLocked() {
	s.idxMu.Lock()
	if s.idx != nil {
		if err := s.idx.Close(); err != nil {
			s.logger.Warn("closing the catalog index before rebuilding it", "error", err.Error())
		}
		s.idx = nil
	}
	s.idxMu.Unlock()
	s.indexRev.Store(0)
	if _, err := os.Stat(s.indexPath); err != nil {
		return
	}
	aside := fmt.Sprintf("%s.rebuild-%d-retired", s.indexPath, time.Now().UnixNano())
	if err := os.Rename(s.indexPath, aside); err != nil {
		s.logger.Warn("moving the old catalog index aside failed; removing it", "error", err.Error())
		if err := os.RemoveAll(s.indexPath); err != nil {
			s.logger.Error("removing the old catalog index failed", "path", s.indexPath, "error", err.Error())
		}
	}
}

// startRebuild starts a background rebuild unless one runs already (that
// one is returned) or the catalog is closed (nil).
func (s *Service) startRebuild(reason string, progress index.Progress) *rebuild {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.closed {
		return nil
	}
	if s.bg != nil {
		return s.bg
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rebuild{cancel: cancel, done: make(chan struct{})}
	s.bg = r
	s.rebuilding.Store(true)
	s.bgDone.Add(1)
	go s.runRebuild(ctx, r, reason, progress)
	return r
}

// supersedeRebuild cancels a background rebuild a synchronous one replaces.
func (s *Service) supersedeRebuild() {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bg != nil {
		s.bg.superseded = true
		s.bg.cancel()
	}
}

func (s *Service) runRebuild(ctx context.Context, r *rebuild, reason string, progress index.Progress) {
	defer s.bgDone.Done()
	start := time.Now()
	s.logger.Info("catalog index rebuild started in the background; searches wait for it", "reason", reason, "path", s.indexPath)
	docs, caught, err := s.rebuildInBackground(ctx, progress)
	ms := time.Since(start).Milliseconds()
	switch {
	case err == nil:
		s.logger.Info("catalog index rebuilt", "duration_ms", ms, "documents", docs, "rev", s.indexRev.Load(), "caught_up_revisions", caught)
	case ctx.Err() != nil:
		s.logger.Info("catalog index rebuild cancelled", "duration_ms", ms)
	default:
		s.logger.Error("catalog index rebuild failed; the next search retries it", "duration_ms", ms, "error", err.Error())
	}
	s.bgMu.Lock()
	r.err, s.bgErr = err, err
	s.bg = nil
	s.rebuilding.Store(false)
	s.bgMu.Unlock()
	r.cancel()
	close(r.done)
}

// rebuildInBackground builds from a snapshot and installs it, starting over
// when the change log no longer holds every write made meanwhile.
func (s *Service) rebuildInBackground(ctx context.Context, progress index.Progress) (docs, caught int, err error) {
	for round := 1; ; round++ {
		var rev uint64
		s.buildMu.Lock()
		if err = ctx.Err(); err == nil {
			rev, docs, err = s.buildSnapshot(ctx, progress, s.buildHook)
		}
		s.buildMu.Unlock()
		if err != nil {
			return docs, 0, err
		}
		caught, err = s.installRebuilt(ctx, rev, round < maxRebuildRounds)
		if errors.Is(err, errChangesPruned) {
			s.logger.Warn("writes during the catalog index rebuild outran the change log; rebuilding again", "snapshot_rev", rev)
			continue
		}
		return docs, caught, err
	}
}

// installRebuilt swaps in the index built at rev and catches it up over the
// change log; when the log no longer reaches rev it returns errChangesPruned
// or keeps the index at rev for fresh to repair. Cancelled, it leaves the
// folder valid at rev.
func (s *Service) installRebuilt(ctx context.Context, rev uint64, again bool) (int, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ix, err := index.Open(s.indexPath)
	if err != nil {
		return 0, fmt.Errorf("open rebuilt catalog index: %w", err)
	}
	s.idxMu.Lock()
	s.idx = ix
	s.idxMu.Unlock()
	s.indexRev.Store(rev)
	n, err := s.catchUpLocked(ctx)
	switch {
	case err == nil:
	case errors.Is(err, errChangesPruned) && again:
		s.retireIndexLocked()
		return 0, err
	case ctx.Err() != nil:
		return 0, ctx.Err()
	default:
		s.logger.Warn("catalog index rebuilt, but catching it up failed; the next search retries", "rev", rev, "error", err.Error())
		return 0, nil
	}
	// On etcd the log may hold other replicas' revisions this one has not
	// heard of yet.
	s.raiseStoreRev(s.indexRev.Load())
	s.applyQueuedLocked(ctx)
	return n, nil
}

// awaitRebuild waits until no background rebuild runs or ctx ends; a failed
// one returns its error, a superseded one does not.
func (s *Service) awaitRebuild(ctx context.Context) error {
	for {
		s.bgMu.Lock()
		r, closed := s.bg, s.closed
		s.bgMu.Unlock()
		if r == nil {
			return nil
		}
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err()
		}
		if r.err != nil && !r.superseded {
			if closed || s.isClosed() {
				return errIndexClosed
			}
			return r.err
		}
	}
}
