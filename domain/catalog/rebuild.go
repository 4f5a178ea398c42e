package catalog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/accordsai/accords-mcp/index"
)

// A rebuild at start (index missing, corrupt, from another mapping, ahead
// of the database, or beyond catch-up) takes seconds to minutes on a large
// catalog; done inside Open, the server would answer nothing meanwhile,
// not even initialize. With Options.BackgroundRebuild it runs here: the
// build reads one snapshot without the write lock, so writes commit as
// usual; the write lock is taken only to swap the new index in and catch
// it up over the change log from the snapshot's revision. Reads that need
// the index (fresh) wait for it; the others never do.

// rebuild is one background rebuild.
type rebuild struct {
	cancel context.CancelFunc
	done   chan struct{}
	// err is the outcome, set before done is closed; superseded says a
	// synchronous rebuild cancelled this one to take its place, so its
	// waiters go on to wait for that one instead of failing.
	err        error
	superseded bool
}

// ErrIndexRebuilding is what IndexStats returns while a background rebuild
// runs.
var ErrIndexRebuilding = errors.New("catalog index is being rebuilt in the background; searches wait for it")

var errIndexClosed = errors.New("catalog index is closed")

// maxRebuildRounds bounds how many times a background rebuild starts over
// because writes during the build outran the change log; the index of the
// last round is then kept at its snapshot and the next search repairs it
// under the write lock (fresh).
const maxRebuildRounds = 3

// Rebuilding reports whether a background rebuild is running.
func (s *Service) Rebuilding() bool { return s.rebuilding.Load() }

// WaitIndex waits until no background rebuild runs, or ctx ends; when
// there is no index then, it returns why the last background rebuild
// failed.
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
// background rebuild: left in place, a crash during the rebuild could
// leave it for a later start to take as valid (an index ahead of the
// database looks current once writes bring the store to its revision).
// index.Build removes the moved folder with other leftovers.
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

// supersedeRebuild cancels a background rebuild that a synchronous one
// replaces; the caller then waits for buildMu, which the cancelled build
// releases promptly.
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

// rebuildInBackground builds from a snapshot and installs the result,
// starting over when the writes made meanwhile are no longer all in the
// change log.
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

// installRebuilt swaps the index built at rev in and catches it up over
// the change log. When the log no longer reaches back to rev it returns
// errChangesPruned (again: another round) or keeps the index at rev for
// fresh to repair. Cancelled (Close, or a synchronous rebuild took over),
// it leaves the folder as built: valid at rev, so a later start only
// catches it up.
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

// awaitRebuild waits until no background rebuild runs or ctx ends. A
// rebuild that failed returns its error (the next read starts another); one
// superseded by a synchronous rebuild does not (fresh then waits for that
// one on the write lock).
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
