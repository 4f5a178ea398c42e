package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
)

// cacheMeta describes the last good index of a source. The raw bytes live
// in a separate bucket so listing metadata never decodes megabytes.
type cacheMeta struct {
	IndexURL     string    `json:"index_url"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	SHA256       string    `json:"sha256"`
	Bytes        int       `json:"bytes"`
	FetchedAt    time.Time `json:"fetched_at"` // last 200 with this content
	CheckedAt    time.Time `json:"checked_at"` // last time the source confirmed it (200 or 304)
}

// cachedIndex is the cache of one source, if any.
type cachedIndex struct {
	meta cacheMeta
	body []byte
}

// loadCache returns the cached index of src, ignoring a copy taken from
// another index URL.
func (s *Service) loadCache(src Source) (*cachedIndex, error) {
	var c *cachedIndex
	err := s.db.View(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketSources)
		mb, bb := root.Bucket(bucketIndexMeta), root.Bucket(bucketIndexBody)
		if mb == nil || bb == nil {
			return nil
		}
		var m cacheMeta
		found, err := store.GetJSON(mb, []byte(src.SourceID), &m)
		if err != nil || !found || m.IndexURL != src.IndexURL {
			return err
		}
		body := bb.Get([]byte(src.SourceID))
		if body == nil {
			return nil
		}
		sum := sha256.Sum256(body)
		if hex.EncodeToString(sum[:]) != m.SHA256 {
			// A torn or tampered copy is no copy.
			return nil
		}
		c = &cachedIndex{meta: m, body: append([]byte(nil), body...)}
		return nil
	})
	return c, err
}

// saveCache stores body as the last good index of src.
func (s *Service) saveCache(src Source, body []byte, etag, lastModified string, at time.Time) error {
	sum := sha256.Sum256(body)
	m := cacheMeta{IndexURL: src.IndexURL, ETag: etag, LastModified: lastModified, SHA256: hex.EncodeToString(sum[:]),
		Bytes: len(body), FetchedAt: at, CheckedAt: at}
	return s.db.Update(func(tx store.Tx) error {
		if !sourceStillIs(tx, src) {
			// Deleted or repointed meanwhile: the copy would be orphaned.
			return nil
		}
		mb, err := nested(tx, bucketIndexMeta)
		if err != nil {
			return err
		}
		bb, err := nested(tx, bucketIndexBody)
		if err != nil {
			return err
		}
		if err := bb.Put([]byte(src.SourceID), body); err != nil {
			return err
		}
		return store.PutJSON(mb, []byte(src.SourceID), m)
	})
}

// touchCache records that the source confirmed the cached copy (304).
func (s *Service) touchCache(src Source, etag string, at time.Time) error {
	return s.db.Update(func(tx store.Tx) error {
		mb := tx.Bucket(store.BucketSources).Bucket(bucketIndexMeta)
		if mb == nil {
			return nil
		}
		var m cacheMeta
		found, err := store.GetJSON(mb, []byte(src.SourceID), &m)
		if err != nil || !found || m.IndexURL != src.IndexURL {
			return err
		}
		m.CheckedAt = at
		if etag != "" {
			m.ETag = etag
		}
		return store.PutJSON(mb, []byte(src.SourceID), m)
	})
}

func sourceStillIs(tx store.Tx, src Source) bool {
	defs := tx.Bucket(store.BucketSources).Bucket(bucketDefs)
	if defs == nil {
		return false
	}
	var cur Source
	found, err := store.GetJSON(defs, []byte(src.SourceID), &cur)
	return err == nil && found && cur.IndexURL == src.IndexURL
}

func deleteCache(tx store.Tx, sourceID string) error {
	root := tx.Bucket(store.BucketSources)
	for _, name := range [][]byte{bucketIndexMeta, bucketIndexBody} {
		if b := root.Bucket(name); b != nil {
			if err := b.Delete([]byte(sourceID)); err != nil {
				return fmt.Errorf("delete cached index: %w", err)
			}
		}
	}
	return nil
}

// CacheInfo describes the cached index of a source (sources_list).
type CacheInfo struct {
	FetchedAt time.Time `json:"fetched_at"`
	CheckedAt time.Time `json:"checked_at"`
	Bytes     int       `json:"bytes"`
	SHA256    string    `json:"sha256"`
	ETag      string    `json:"etag,omitempty"`
}

// SourceView is a source with the state of its offline copy.
type SourceView struct {
	Source
	IndexCache *CacheInfo `json:"index_cache,omitempty"`
}

// SourceViews lists every source (sorted by source_id) with its cache state.
func (s *Service) SourceViews() ([]SourceView, error) {
	srcs, err := s.Sources()
	if err != nil {
		return nil, err
	}
	out := make([]SourceView, 0, len(srcs))
	err = s.db.View(func(tx store.Tx) error {
		mb := tx.Bucket(store.BucketSources).Bucket(bucketIndexMeta)
		for _, src := range srcs {
			v := SourceView{Source: src}
			if mb != nil {
				var m cacheMeta
				found, err := store.GetJSON(mb, []byte(src.SourceID), &m)
				if err != nil {
					return err
				}
				if found && m.IndexURL == src.IndexURL {
					v.IndexCache = &CacheInfo{FetchedAt: m.FetchedAt, CheckedAt: m.CheckedAt, Bytes: m.Bytes, SHA256: m.SHA256, ETag: m.ETag}
				}
			}
			out = append(out, v)
		}
		return nil
	})
	if err != nil {
		return nil, apperr.Internal("list catalog sources", err)
	}
	return out, nil
}

// DBPath is the database file (reported as root_dir).
func (s *Service) DBPath() string { return s.db.Path() }
