// Package index is the bleve full-text index of cookbook entries, one
// document per (cookbook, version, entry). It is derived state: each update
// carries the catalog revision it reflects, and it can be rebuilt any time.
package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
)

// MappingVersion changes with the mapping or document shape; an index
// built with another version is rebuilt (D8).
const MappingVersion = "accords.catalog.index.v12"

var (
	keyRev     = []byte("catalog_rev")
	keyMapping = []byte("mapping_version")
)

// docType is the bleve document type of entries.
const docType = "entry"

// Doc is one indexed entry.
type Doc struct {
	CookbookID string
	Version    string
	// VersionSort is a byte-sortable encoding of the version's semver
	// precedence (see catalog.VersionSortKey); the index sorts by it.
	VersionSort   string
	Latest        bool
	EntryID       string
	EntryType     string
	Title         string
	Description   string
	ConnectorID   string
	Verb          string
	Tags          []string
	CookbookTitle string
}

// ID is the document id; ids and versions cannot contain '@' or '/'.
func (d Doc) ID() string { return DocID(d.CookbookID, d.Version, d.EntryID) }

// DocID builds a document id.
func DocID(cookbookID, version, entryID string) string {
	return cookbookID + "@" + version + "/" + entryID
}

// Hit is one search result; the index stores each document's Hit (without
// its score) in the "hit" field.
type Hit struct {
	CookbookID  string   `json:"cookbook_id"`
	Version     string   `json:"version"`
	EntryID     string   `json:"entry_id"`
	EntryType   string   `json:"entry_type"`
	Title       string   `json:"title,omitempty"`
	ConnectorID string   `json:"connector_id,omitempty"`
	Verb        string   `json:"verb,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Latest      bool     `json:"latest"`
	Score       float64  `json:"score"`
}

// bleveDoc is what bleve indexes. Every version of an entry has the same
// text fields, so identical entries score the same (D7); Latest only
// filters.
type bleveDoc struct {
	CookbookID  string   `json:"cookbook_id"`
	Version     string   `json:"version"`
	VersionSort string   `json:"version_sort"`
	Latest      bool     `json:"latest"`
	EntryID     string   `json:"entry_id"`
	EntryType   string   `json:"entry_type"`
	ConnectorID string   `json:"connector_id"`
	Verb        string   `json:"verb"`
	Tags        []string `json:"tags"`
	Title       string   `json:"title"`
	Text        string   `json:"text"`
	Hit         string   `json:"hit"`
	// Sig is a digest of every other field: a document whose signature is
	// already in the index is indexed already, exactly so.
	Sig string `json:"sig"`
}

// Type selects the document mapping (bleve's Classifier interface).
func (bleveDoc) Type() string { return docType }

func toBleve(d Doc) bleveDoc {
	hit, _ := json.Marshal(Hit{CookbookID: d.CookbookID, Version: d.Version, EntryID: d.EntryID, EntryType: d.EntryType,
		Title: d.Title, ConnectorID: d.ConnectorID, Verb: d.Verb, Tags: d.Tags, Latest: d.Latest})
	// Text holds everything searchable besides the title, ids split into words
	// ("google.gmail.labels.list" → "google gmail labels list").
	parts := []string{d.Description, d.CookbookTitle}
	for _, s := range append([]string{d.CookbookID, d.EntryID, d.ConnectorID, d.Verb}, d.Tags...) {
		parts = append(parts, splitWords(s))
	}
	bd := bleveDoc{
		CookbookID: d.CookbookID, Version: d.Version, VersionSort: d.VersionSort, Latest: d.Latest,
		EntryID: d.EntryID, EntryType: d.EntryType, ConnectorID: d.ConnectorID, Verb: d.Verb, Tags: d.Tags,
		Title: d.Title, Text: strings.Join(parts, " \n "), Hit: string(hit),
	}
	raw, _ := json.Marshal(bd)
	sum := sha256.Sum256(raw)
	bd.Sig = hex.EncodeToString(sum[:16])
	return bd
}

// mapDocument maps bd through the index mapping and stores the sort fields'
// doc values uncompressed, one document per chunk, so sorting a few matches
// never decompresses whole chunks (the search budget). zap merges
// uncompressed doc values correctly only when also unchunked.
func mapDocument(m mapping.IndexMapping, id string, bd bleveDoc) (*document.Document, error) {
	doc := document.NewDocument(id)
	if err := m.MapDocument(doc, bd); err != nil {
		return nil, err
	}
	for i, f := range doc.Fields {
		if tf, ok := f.(*document.TextField); ok && sortFields[tf.Name()] {
			doc.Fields[i] = document.NewTextFieldCustom(tf.Name(), tf.ArrayPositions(), tf.Value(),
				tf.Options()|bleveindex.SkipDVCompression|bleveindex.SkipDVChunking, tf.Analyzer())
		}
	}
	return doc, nil
}

// sortFields are the fields searches and Apply sort on (see mapDocument).
var sortFields = map[string]bool{"version_sort": true, "cookbook_id": true, "entry_id": true, "sig": true}

func splitWords(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '_', '-', '/', ':':
			return ' '
		}
		return r
	}, s)
}

// NewMapping is the explicit mapping: English text for titles and
// descriptions, keywords for ids, connector, verb, tags, type and versions,
// a boolean latest flag, doc values on the sort fields, nothing dynamic.
func NewMapping() mapping.IndexMapping {
	kw := func(docValues bool) *mapping.FieldMapping {
		f := bleve.NewKeywordFieldMapping()
		f.Store = false
		f.IncludeInAll = false
		f.IncludeTermVectors = false
		f.DocValues = docValues
		return f
	}
	text := func() *mapping.FieldMapping {
		f := bleve.NewTextFieldMapping()
		f.Analyzer = en.AnalyzerName
		f.Store = false
		f.IncludeInAll = false
		f.IncludeTermVectors = false
		f.DocValues = false
		return f
	}
	stored := bleve.NewTextFieldMapping()
	stored.Analyzer = keyword.Name
	stored.Index = false
	stored.Store = true
	stored.IncludeInAll = false
	stored.IncludeTermVectors = false
	stored.DocValues = false
	flag := bleve.NewBooleanFieldMapping()
	flag.Store = false
	flag.IncludeInAll = false
	flag.DocValues = false

	dm := bleve.NewDocumentStaticMapping()
	for _, name := range []string{"cookbook_id", "entry_id", "version_sort", "sig"} {
		dm.AddFieldMappingsAt(name, kw(true))
	}
	for _, name := range []string{"version", "entry_type", "connector_id", "verb", "tags"} {
		dm.AddFieldMappingsAt(name, kw(false))
	}
	dm.AddFieldMappingsAt("latest", flag)
	for _, name := range []string{"title", "text"} {
		dm.AddFieldMappingsAt(name, text())
	}
	dm.AddFieldMappingsAt("hit", stored)

	im := bleve.NewIndexMapping()
	im.DefaultMapping = bleve.NewDocumentDisabledMapping()
	im.AddDocumentMapping(docType, dm)
	im.DefaultAnalyzer = en.AnalyzerName
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	return im
}

// ErrNeedsRebuild means the folder holds no usable index: it is missing,
// corrupt, or was built with another mapping.
var ErrNeedsRebuild = errors.New("index needs rebuild")

// Index is an open on-disk (scorch) index.
type Index struct {
	path string
	mu   sync.RWMutex // guards bi against Close
	bi   bleve.Index
}

// Open opens the index at path. A missing, unreadable or foreign index is
// reported as ErrNeedsRebuild (wrapped with the reason).
func Open(path string) (*Index, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNeedsRebuild, err)
	}
	bi, err := openBleve(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNeedsRebuild, err)
	}
	mv, err := bi.GetInternal(keyMapping)
	if err != nil || string(mv) != MappingVersion {
		bi.Close()
		return nil, fmt.Errorf("%w: mapping version %q, want %q", ErrNeedsRebuild, mv, MappingVersion)
	}
	if _, err := readRev(bi); err != nil {
		bi.Close()
		return nil, fmt.Errorf("%w: %w", ErrNeedsRebuild, err)
	}
	return &Index{path: path, bi: bi}, nil
}

// openBleve recovers from panics inside bleve's open path: a corrupt folder
// must lead to a rebuild, never a crash.
func openBleve(path string) (bi bleve.Index, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("open index: %v", r)
		}
	}()
	return bleve.OpenUsing(path, scorchConfig())
}

// indexType is bleve's name for its scorch index, the one whose
// configuration scorchConfig holds.
const indexType = "scorch"

// scorchConfig: live updates are one-cookbook batches, so a short persister
// nap merges recent batches in memory into one file and a small merge floor
// keeps small segments merging with each other, not with the large ones.
// The index is derived and catches up from its recorded revision (Close).
func scorchConfig() map[string]any {
	return map[string]any{
		"unsafe_batch": true,
		"scorchPersisterOptions": map[string]any{
			"PersisterNapTimeMSec":      int(PersistNap / time.Millisecond),
			"PersisterNapUnderNumFiles": 1000,
		},
		"scorchMergePlanOptions": map[string]any{"FloorSegmentSize": mergeFloor},
	}
}

// PersistNap is how long scorch's persister waits for more in-memory
// batches before writing them; Close waits at most this much longer.
const PersistNap = 100 * time.Millisecond

// mergeFloor is the segment size below which scorch's planner treats
// segments as equal (default 2000).
const mergeFloor = 200

func readRev(bi bleve.Index) (uint64, error) {
	raw, err := bi.GetInternal(keyRev)
	if err != nil {
		return 0, err
	}
	if raw == nil {
		return 0, errors.New("index has no catalog revision")
	}
	return strconv.ParseUint(string(raw), 10, 64)
}

// Path is the index folder.
func (ix *Index) Path() string { return ix.path }

// Rev is the catalog revision the index reflects.
func (ix *Index) Rev() (uint64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.bi == nil {
		return 0, errors.New("index closed")
	}
	return readRev(ix.bi)
}

// FlushTimeout bounds how long Close waits for in-memory batches to reach
// disk.
const FlushTimeout = 60 * time.Second

// Close waits for pending batches to persist, then closes the index. Live
// updates do not wait for disk (unsafe_batch): a batch lost in a crash loses
// its recorded revision too, and start-up catches up (D8).
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.bi == nil {
		return nil
	}
	ix.waitPersisted(FlushTimeout)
	err := ix.bi.Close()
	ix.bi = nil
	return err
}

// scorchStats is the statistics map of the scorch index under bi, as
// bleve's Index.StatsMap reports it under "index" (nil if there is none).
func scorchStats(bi bleve.Index) map[string]any {
	m, _ := bi.StatsMap()["index"].(map[string]any)
	return m
}

// waitPersisted polls scorch's stats until the persisted epoch reaches the
// root epoch or the timeout passes (scorch's Close does not persist).
func (ix *Index) waitPersisted(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		m := scorchStats(ix.bi)
		cur, ok := m["CurRootEpoch"].(uint64)
		done, ok2 := m["LastPersistedEpoch"].(uint64)
		if !ok || !ok2 || done >= cur {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// DocCount is the number of indexed entries.
func (ix *Index) DocCount() (uint64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.bi == nil {
		return 0, errors.New("index closed")
	}
	return ix.bi.DocCount()
}

// Update replaces every document of the named cookbooks with docs and
// records rev, all in one bleve batch.
type Update struct {
	Cookbooks []string
	// Created lists cookbooks of Cookbooks that had no documents at the
	// previous revision, so there is nothing to look up and delete.
	Created []string
	Docs    []Doc
	Rev     uint64
}

// Apply applies u atomically; a document already indexed with the same
// signature is left as it is.
func (ix *Index) Apply(ctx context.Context, u Update) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.bi == nil {
		return errors.New("index closed")
	}
	batch := ix.bi.NewBatch()
	keep := map[string]bool{}
	for _, d := range u.Docs {
		keep[d.ID()] = true
	}
	created := map[string]bool{}
	for _, cb := range u.Created {
		created[cb] = true
	}
	indexed := map[string]string{} // id → signature
	for _, cb := range u.Cookbooks {
		if created[cb] {
			continue
		}
		if err := ix.docSigs(ctx, cb, indexed); err != nil {
			return err
		}
	}
	for id := range indexed {
		if !keep[id] {
			batch.Delete(id)
		}
	}
	for _, d := range u.Docs {
		id := d.ID()
		bd := toBleve(d)
		if sig, ok := indexed[id]; ok && sig == bd.Sig {
			continue
		}
		doc, err := mapDocument(ix.bi.Mapping(), id, bd)
		if err == nil {
			err = batch.IndexAdvanced(doc)
		}
		if err != nil {
			return fmt.Errorf("index %s: %w", id, err)
		}
	}
	batch.SetInternal(keyRev, []byte(strconv.FormatUint(u.Rev, 10)))
	return ix.bi.Batch(batch)
}

// docSigs adds the id and signature (read from doc values) of every
// document of one cookbook to into. Pages follow document ids, not offsets.
func (ix *Index) docSigs(ctx context.Context, cookbookID string, into map[string]string) error {
	q := query.NewTermQuery(cookbookID)
	q.SetField("cookbook_id")
	const page = 1000
	order := search.SortOrder{&search.SortDocID{}, &search.SortField{Field: "sig", Type: search.SortFieldAsString}}
	var after []string
	for {
		req := bleve.NewSearchRequestOptions(q, page, 0, false)
		req.Score = "none"
		req.SortByCustom(order)
		if after != nil {
			req.SetSearchAfter(after)
		}
		res, err := ix.bi.SearchInContext(ctx, req)
		if err != nil {
			return fmt.Errorf("list documents of %s: %w", cookbookID, err)
		}
		for _, h := range res.Hits {
			if len(h.Sort) == 2 {
				into[h.ID] = h.Sort[1]
			}
		}
		if len(res.Hits) < page {
			return nil
		}
		after = res.Hits[len(res.Hits)-1].Sort
	}
}

// Progress reports rebuild progress: done of total documents.
type Progress func(done, total int)

// Source feeds every document of the catalog to yield; total is the number
// of documents it will yield (for progress), or 0 when unknown.
type Source struct {
	Total int
	Rev   uint64
	Each  func(yield func(Doc) error) error
}

// BatchSize is the number of documents per bleve batch during a rebuild.
const BatchSize = 1000

// Build writes a fresh index of src into a sibling folder and swaps it in
// only when complete. The caller must not hold the index at path open.
func Build(ctx context.Context, path string, src Source, progress Progress) error {
	tmp := fmt.Sprintf("%s.rebuild-%d", path, time.Now().UnixNano())
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	// Leftovers of a rebuild that crashed are garbage.
	if stale, _ := filepath.Glob(path + ".rebuild-*"); len(stale) > 0 {
		for _, d := range stale {
			os.RemoveAll(d)
		}
	}
	// Batches do not wait for disk; Close waits for all before the swap.
	bi, err := bleve.NewUsing(tmp, NewMapping(), indexType, indexType, scorchConfig())
	if err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	cleanup := func() { bi.Close(); os.RemoveAll(tmp) }
	batch := bi.NewBatch()
	done := 0
	flush := func() error {
		if batch.Size() == 0 {
			return nil
		}
		if err := bi.Batch(batch); err != nil {
			return err
		}
		batch.Reset()
		if progress != nil {
			progress(done, src.Total)
		}
		return nil
	}
	err = src.Each(func(d Doc) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		doc, err := mapDocument(bi.Mapping(), d.ID(), toBleve(d))
		if err == nil {
			err = batch.IndexAdvanced(doc)
		}
		if err != nil {
			return err
		}
		done++
		if batch.Size() >= BatchSize {
			return flush()
		}
		return nil
	})
	if err == nil {
		batch.SetInternal(keyMapping, []byte(MappingVersion))
		batch.SetInternal(keyRev, []byte(strconv.FormatUint(src.Rev, 10)))
		err = bi.Batch(batch)
		if err == nil && progress != nil {
			progress(done, src.Total)
		}
	}
	if err != nil {
		cleanup()
		return fmt.Errorf("build index: %w", err)
	}
	built := &Index{path: tmp, bi: bi}
	if err := built.Close(); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("close new index: %w", err)
	}
	old := path + ".old"
	os.RemoveAll(old)
	if _, err := os.Stat(path); err == nil {
		if err := os.Rename(path, old); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("move old index aside: %w", err)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("install new index: %w", err)
	}
	os.RemoveAll(old)
	return nil
}
