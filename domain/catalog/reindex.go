package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/store"
)

// syncIndex brings the index in line with the store at start-up; with
// background set, a non-empty rebuild continues after it returns.
func (s *Service) syncIndex(ctx context.Context, progress index.Progress, background bool) (OpenReport, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	want := s.storeRev.Load()
	rebuild := func(reason string) (OpenReport, error) {
		if background && want > 0 {
			s.retireIndexLocked()
			if s.startRebuild(reason, progress) == nil {
				return OpenReport{}, errIndexClosed
			}
			return OpenReport{Rebuilt: true, Background: true, Reason: reason}, nil
		}
		if err := s.rebuildLocked(ctx, progress); err != nil {
			return OpenReport{}, err
		}
		return OpenReport{Rebuilt: true, Reason: reason, Rev: s.indexRev.Load()}, nil
	}
	ix, err := index.Open(s.indexPath)
	if err != nil {
		reason := "index missing"
		if _, statErr := os.Stat(s.indexPath); statErr == nil {
			reason = "index corrupt or built with another mapping"
		}
		if want == 0 && reason == "index missing" {
			s.logger.Info("creating catalog index", "path", s.indexPath)
		} else {
			s.logger.Warn("rebuilding catalog index", "reason", reason, "error", err.Error())
		}
		return rebuild(reason)
	}
	have, err := ix.Rev()
	if err != nil {
		ix.Close()
		return OpenReport{}, err
	}
	s.idxMu.Lock()
	s.idx = ix
	s.idxMu.Unlock()
	s.indexRev.Store(have)
	switch {
	case have == want:
		return OpenReport{Rev: have}, nil
	case have > want:
		// The database went back in time (restored backup): distrust it all.
		s.logger.Warn("catalog index is ahead of the database; rebuilding", "index_rev", have, "db_rev", want)
		return rebuild("index ahead of the database")
	}
	n, err := s.catchUpLocked(ctx)
	if err != nil {
		s.logger.Warn("catalog index catch-up failed; rebuilding", "error", err.Error())
		return rebuild("index behind the database")
	}
	return OpenReport{CaughtUp: n, Reason: "index behind the database", Rev: s.indexRev.Load()}, nil
}

var errChangesPruned = errors.New("change log does not reach back to the index revision")

// catchUpLocked re-indexes the cookbooks changed since the index revision.
func (s *Service) catchUpLocked(ctx context.Context) (int, error) {
	from := s.indexRev.Load()
	var upd index.Update
	err := s.db.View(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		to := readU64(root.Get(keyRev))
		if to <= from {
			upd.Rev = from
			return nil
		}
		touched := map[string]bool{}
		for r := from + 1; r <= to; r++ {
			raw := root.Get(changeKey(r))
			if raw == nil {
				return errChangesPruned
			}
			var ids []string
			if err := json.Unmarshal(raw, &ids); err != nil {
				return fmt.Errorf("change log rev %d: %w", r, err)
			}
			for _, id := range ids {
				touched[id] = true
			}
		}
		upd, err = docsFor(root, touched)
		upd.Rev = to
		return err
	})
	if err != nil {
		return 0, err
	}
	if upd.Rev == from {
		return 0, nil
	}
	if err := s.applyLocked(ctx, upd); err != nil {
		return 0, err
	}
	return int(upd.Rev - from), nil
}

// docsFor builds the documents of every version of the touched cookbooks.
func docsFor(root store.Bucket, touched map[string]bool) (index.Update, error) {
	var upd index.Update
	for _, id := range slices.Sorted(maps.Keys(touched)) {
		upd.Cookbooks = append(upd.Cookbooks, id)
		docs, err := cookbookDocs(root, id)
		if err != nil {
			return upd, fmt.Errorf("cookbook %s: %w", id, err)
		}
		upd.Docs = append(upd.Docs, docs...)
	}
	return upd, nil
}

// cookbookDocs decodes every version of one cookbook into index documents,
// flagging the entries of the highest version as latest.
func cookbookDocs(root store.Bucket, id string) ([]index.Doc, error) {
	latest := latestVersion(root, id)
	var docs []index.Doc
	err := versionsOf(root, id, func(v string, stored []byte) error {
		raw, err := unpack(stored)
		if err != nil {
			return fmt.Errorf("version %s: %w", v, err)
		}
		b, err := decodeBundle(raw)
		if err != nil {
			return fmt.Errorf("version %s: %w", v, err)
		}
		docs = append(docs, bundleDocs(b, v == latest)...)
		return nil
	})
	return docs, err
}

func bundleDocs(b *Bundle, latest bool) []index.Doc {
	vs := VersionSortKey(b.Version)
	docs := make([]index.Doc, 0, len(b.Entries))
	for i := range b.Entries {
		e := &b.Entries[i]
		docs = append(docs, index.Doc{
			CookbookID: b.CookbookID, Version: b.Version, VersionSort: vs, Latest: latest,
			EntryID: e.EntryID, EntryType: e.EntryType, Title: e.Title, Description: e.Description,
			ConnectorID: e.IndexConnector(), Verb: e.Verb, Tags: e.Tags,
			CookbookTitle: b.Title,
		})
	}
	return docs
}

func (s *Service) applyLocked(ctx context.Context, upd index.Update) error {
	if hook := s.beforeIndex.Load(); hook != nil {
		(*hook)()
	}
	s.idxMu.RLock()
	ix := s.idx
	s.idxMu.RUnlock()
	if ix == nil {
		return errors.New("catalog index is closed")
	}
	if err := ix.Apply(ctx, upd); err != nil {
		return err
	}
	s.indexRev.Store(upd.Rev)
	return nil
}

// Reindex rebuilds the whole index before it returns, cancelling a running
// background rebuild; progress receives documents done of total.
func (s *Service) Reindex(ctx context.Context, progress index.Progress) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.rebuildLocked(ctx, progress)
}

func (s *Service) rebuildLocked(ctx context.Context, progress index.Progress) error {
	// Keep the index that is there while the store is out of reach: a
	// stale index answers searches, a removed one answers nothing.
	if err := s.db.Ping(); errors.Is(err, store.ErrUnavailable) {
		return fmt.Errorf("rebuild catalog index: %w", err)
	}
	// This rebuild replaces a background one; builds share the folder, so
	// wait for the cancelled one to let go of it.
	s.supersedeRebuild()
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.idx != nil {
		s.idx.Close()
		s.idx = nil
	}
	rev, _, err := s.buildSnapshot(ctx, progress, nil)
	if err != nil {
		return err
	}
	s.indexRev.Store(rev)
	ix, err := index.Open(s.indexPath)
	if err != nil {
		return fmt.Errorf("open rebuilt catalog index: %w", err)
	}
	s.idx = ix
	return nil
}

// buildSnapshot builds the index from one read transaction and returns its
// revision and document count; hook runs once the snapshot is taken. The
// caller holds buildMu.
func (s *Service) buildSnapshot(ctx context.Context, progress index.Progress, hook func(context.Context) error) (uint64, int, error) {
	var rev uint64
	docs := 0
	err := s.db.View(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		rev = readU64(root.Get(keyRev))
		if hook != nil {
			if err := hook(ctx); err != nil {
				return err
			}
		}
		total := 0
		c := root.Cursor()
		for k, v := c.Seek([]byte(pfxItem)); k != nil && bytes.HasPrefix(k, []byte(pfxItem)); k, v = c.Next() {
			var it struct {
				N int `json:"entry_count"`
			}
			if json.Unmarshal(v, &it) == nil {
				total += it.N
			}
		}
		src := index.Source{Total: total, Rev: rev, Each: func(yield func(index.Doc) error) error {
			// Versions of a cookbook are adjacent: index one cookbook at a
			// time so each knows its latest version.
			c := root.Cursor()
			prev := ""
			for k, _ := c.Seek([]byte(pfxBundle)); k != nil && bytes.HasPrefix(k, []byte(pfxBundle)); k, _ = c.Next() {
				id, _ := splitRefKey(k)
				if id == prev {
					continue
				}
				prev = id
				cdocs, err := cookbookDocs(root, id)
				if err != nil {
					// One unreadable bundle must not take search down: skip
					// it and say so.
					s.logger.Error("skipping unreadable cookbook while indexing", "cookbook_id", id, "error", err.Error())
					continue
				}
				for _, d := range cdocs {
					if err := yield(d); err != nil {
						return err
					}
					docs++
				}
			}
			return nil
		}}
		return index.Build(ctx, s.indexPath, src, progress)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("rebuild catalog index: %w", err)
	}
	return rev, docs, nil
}

// fresh makes the index reflect the latest committed revision before a
// read, waiting for (or restarting) a background rebuild first.
func (s *Service) fresh(ctx context.Context) error {
	if err := s.awaitRebuild(ctx); err != nil {
		return err
	}
	if s.indexRev.Load() == s.storeRev.Load() && s.hasIndex() {
		return nil
	}
	s.writeMu.Lock()
	if !s.hasIndex() && s.background && !s.isClosed() {
		// Under the write lock no other rebuild is installing an index.
		r := s.startRebuild("the last rebuild failed", nil)
		s.writeMu.Unlock()
		if r == nil {
			return errIndexClosed
		}
		if err := s.awaitRebuild(ctx); err != nil {
			return err
		}
		s.writeMu.Lock()
	}
	defer s.writeMu.Unlock()
	if !s.hasIndex() {
		if s.isClosed() {
			return errIndexClosed
		}
		return s.rebuildLocked(ctx, nil)
	}
	s.applyQueuedLocked(ctx)
	if s.indexRev.Load() == s.storeRev.Load() {
		return nil
	}
	if _, err := s.catchUpLocked(ctx); err != nil {
		if errors.Is(err, store.ErrUnavailable) {
			// The store is out of reach (etcd down): answer from the index
			// as it stands; the watch catches it up once etcd is back.
			s.logger.Warn("catalog index cannot catch up: the store is unavailable; searching the local index", "index_rev", s.indexRev.Load(), "error", err.Error())
			return nil
		}
		if !errors.Is(err, errChangesPruned) {
			s.logger.Warn("catalog index catch-up failed; rebuilding", "error", err.Error())
		}
		return s.rebuildLocked(ctx, nil)
	}
	return nil
}

// Follow keeps the index in step with other replicas' writes on a shared
// etcd store until ctx ends: each watched change catches the index up over
// the change log, and a compacted history rebuilds it. On bbolt it does
// nothing.
func (s *Service) Follow(ctx context.Context) {
	if s.db.Kind() != store.KindEtcd {
		return
	}
	from, err := s.db.Revision(ctx)
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	s.stopFollow.Store(&cancel)
	s.db.Follow(ctx, store.BucketCatalog, from, func(int64) {
		s.refresh(ctx, false)
	}, func(int64) {
		s.refresh(ctx, true)
	})
	// Writes between opening the index and starting the watch.
	s.refresh(ctx, false)
}

// refresh reads the catalog revision written by any replica and brings
// the index to it (rebuild: from scratch).
func (s *Service) refresh(ctx context.Context, rebuild bool) {
	var rev uint64
	if err := s.db.View(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		rev = readU64(root.Get(keyRev))
		return nil
	}); err != nil {
		s.logger.Warn("catalog revision unreadable; the index catches up later", "error", err.Error())
		return
	}
	s.raiseStoreRev(rev)
	if rebuild {
		// Synchronous, as before: it cancels a background rebuild and takes
		// its place (the watch goroutine waits; searches wait either way).
		s.logger.Warn("etcd compacted the history the catalog watch needed; rebuilding the index", "rev", rev)
		if err := s.Reindex(ctx, nil); err != nil {
			s.logger.Error("catalog index rebuild failed; it is repaired on the next read", "error", err.Error())
		}
		return
	}
	if s.rebuilding.Load() {
		// Waiting here would hold the watch; searches catch up to storeRev.
		return
	}
	if err := s.fresh(ctx); err != nil {
		s.logger.Error("catalog index catch-up failed; it is repaired on the next read", "error", err.Error())
	}
}
