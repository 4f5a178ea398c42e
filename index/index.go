// Package index is the bleve full-text index of cookbook entries. It is
// derived state: the bbolt catalog is the source of truth, every update
// carries the catalog revision it reflects (stored with SetInternal in the
// same batch), and the whole index can be rebuilt from the store at any
// time. One document is indexed per (cookbook, version, entry).
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
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"
)

// MappingVersion changes whenever the mapping or the document shape
// changes; an index built with another version is rebuilt. v6: list_key
// doc values stored uncompressed (see bleveDocument). v7: older versions'
// words in old_title and old_text (see toBleve). v8: document signatures,
// reverted. v9: list_key doc values one document per chunk (see
// bleveDocument); merged segments of v6 to v8 hold garbled keys. v10: a
// stored signature of each document again (see Apply). v11: the signature
// in doc values instead (see docSigs).
const MappingVersion = "accords.catalog.index.v11"

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

// Hit is one search result.
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

	versionSort string
}

// storedHit is the stored form of a hit: the hit plus its version sort key.
type storedHit struct {
	Hit
	VersionSort string `json:"vs"`
}

// bleveDoc is what bleve indexes; field names are the json tags.
type bleveDoc struct {
	CookbookID  string   `json:"cookbook_id"`
	Version     string   `json:"version"`
	ListKey     string   `json:"list_key"`
	Latest      string   `json:"latest"`
	EntryID     string   `json:"entry_id"`
	EntryType   string   `json:"entry_type"`
	ConnectorID string   `json:"connector_id"`
	Verb        string   `json:"verb"`
	Tags        []string `json:"tags"`
	Title       string   `json:"title"`
	Text        string   `json:"text"`
	OldTitle    string   `json:"old_title"`
	OldText     string   `json:"old_text"`
	Hit         string   `json:"hit"`
	// Sig is a digest of every other field: a document whose signature is
	// already in the index is indexed already, exactly so.
	Sig string `json:"sig"`
}

// Type selects the document mapping (bleve's Classifier interface).
func (bleveDoc) Type() string { return docType }

func toBleve(d Doc) bleveDoc {
	hit, _ := json.Marshal(storedHit{Hit: Hit{CookbookID: d.CookbookID, Version: d.Version, EntryID: d.EntryID, EntryType: d.EntryType,
		Title: d.Title, ConnectorID: d.ConnectorID, Verb: d.Verb, Tags: d.Tags, Latest: d.Latest}, VersionSort: d.VersionSort})
	latest := "0"
	if d.Latest {
		latest = "1"
	}
	// The text field holds everything searchable besides the title: the
	// description, the cookbook title, and ids, connector, verb and tags as
	// words ("google.gmail.labels.list" → "google gmail labels list"), so a
	// plain-language query finds them. One field keeps queries cheap.
	parts := []string{d.Description, d.CookbookTitle}
	for _, s := range append([]string{d.CookbookID, d.EntryID, d.ConnectorID, d.Verb}, d.Tags...) {
		parts = append(parts, splitWords(s))
	}
	bd := bleveDoc{
		CookbookID: d.CookbookID, Version: d.Version, ListKey: listKey(d), Latest: latest,
		EntryID: d.EntryID, EntryType: d.EntryType, ConnectorID: d.ConnectorID, Verb: d.Verb, Tags: d.Tags,
		Hit: string(hit),
	}
	// The words of older versions go to fields of their own, so that a
	// default search (latest versions only) never meets them: it needs no
	// exclusion clause, visits and scores only the latest entries, and
	// weighs words by how often they occur in those (at 10,000 bundles with
	// 17,000 older entries, half the time a query; docs/performance.md).
	if d.Latest {
		bd.Title, bd.Text = d.Title, strings.Join(parts, " \n ")
	} else {
		bd.OldTitle, bd.OldText = d.Title, strings.Join(parts, " \n ")
	}
	raw, _ := json.Marshal(bd)
	sum := sha256.Sum256(raw)
	bd.Sig = hex.EncodeToString(sum[:16])
	return bd
}

// textFields are the analysed fields; an empty one is left out of the
// document rather than indexed with no words.
var textFields = map[string]bool{"title": true, "text": true, "old_title": true, "old_text": true}

// bleveDocument maps d through the index mapping and stores its list_key doc
// values uncompressed. A listing without text sorts every match by
// list_key, and with snappy-compressed doc values each such search
// decompressed the chunks of all its matches again: most of its time. The
// keys are short, so the index grows little. Merges keep the options only
// if every merged segment has them, hence the MappingVersion bumps.
//
// Uncompressed goes with unchunked (one document per chunk), as bleve's
// own geo fields set them: zap v17 writes and reads uncompressed chunked
// doc values correctly, but its merge reads each such chunk as the value
// of one document (the chunk's number), so after a merge one document per
// chunk carried every key of its chunk and the others none, and listings
// came back out of order (TestIncrementalIndexEqualsRebuild). The
// signature's doc values (docSigs reads them) are stored the same way.
func bleveDocument(m mapping.IndexMapping, d Doc) (*document.Document, error) {
	return mapDocument(m, d.ID(), toBleve(d))
}

func mapDocument(m mapping.IndexMapping, id string, bd bleveDoc) (*document.Document, error) {
	doc := document.NewDocument(id)
	if err := m.MapDocument(doc, bd); err != nil {
		return nil, err
	}
	kept := doc.Fields[:0]
	for _, f := range doc.Fields {
		tf, ok := f.(*document.TextField)
		switch {
		case !ok:
		case textFields[tf.Name()] && len(tf.Value()) == 0:
			continue
		case tf.Name() == "list_key" || tf.Name() == "sig":
			f = document.NewTextFieldCustom(tf.Name(), tf.ArrayPositions(), tf.Value(),
				tf.Options()|bleveindex.SkipDVCompression|bleveindex.SkipDVChunking, tf.Analyzer())
		}
		kept = append(kept, f)
	}
	doc.Fields = kept
	return doc, nil
}

// listKey is one keyword whose ascending byte order is the tie-break
// order: higher version first, then cookbook_id, then entry_id. Sorting on
// one short doc-value field instead of three keeps filter-only listings
// cheap. The version part mirrors each printable byte of the version sort
// key (c → 0x9e-c, still printable) so ascending order becomes descending,
// and ends with 0x7f, above every mirrored byte, so that of two keys where
// one is a prefix of the other the longer (higher) version comes first.
// Ids cannot contain spaces.
func listKey(d Doc) string {
	b := make([]byte, 0, len(d.VersionSort)+len(d.CookbookID)+len(d.EntryID)+3)
	for i := range len(d.VersionSort) {
		c := d.VersionSort[i]
		if c < 0x20 || c > 0x7e {
			c = 0x20
		}
		b = append(b, 0x9e-c)
	}
	b = append(b, 0x7f, ' ')
	b = append(b, d.CookbookID...)
	b = append(b, ' ')
	b = append(b, d.EntryID...)
	return string(b)
}

func splitWords(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '_', '-', '/', ':':
			return ' '
		}
		return r
	}, s)
}

// NewMapping is the explicit index mapping: English-analysed text for
// titles and descriptions, keyword fields for ids, connector, verb, tags,
// entry type and version, nothing dynamic.
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

	dm := bleve.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt("cookbook_id", kw(false))
	dm.AddFieldMappingsAt("entry_id", kw(false))
	dm.AddFieldMappingsAt("list_key", kw(true))
	for _, name := range []string{"version", "latest", "entry_type", "connector_id", "verb", "tags"} {
		dm.AddFieldMappingsAt(name, kw(false))
	}
	for _, name := range []string{"title", "text", "old_title", "old_text"} {
		dm.AddFieldMappingsAt(name, text())
	}
	dm.AddFieldMappingsAt("hit", stored)
	dm.AddFieldMappingsAt("sig", kw(true))

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
	cmp  compactor
	keys keyCache
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
	ix := &Index{path: path, bi: bi}
	ix.cmp.init()
	ix.scheduleCompaction()
	return ix, nil
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

// scorchConfig is the index's scorch configuration. Live updates are
// batches of one cookbook, so scorch's defaults (persist every batch as
// its own segment file at once; treat every segment under 2000 documents
// as that size when planning merges) had every replica re-merge its whole
// index every few upserts: with several replicas on one host (each
// indexing every write it sees) the merges took most of the CPU. A short
// persister nap lets the batches of the last PersistNap merge in memory
// into one file, and a small merge floor keeps small segments merging with
// each other instead of with the large ones (merge cost logarithmic in the
// index size, not linear). Nothing durable depends on either: the index is
// derived and catches up from its recorded revision (see Close).
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

// mergeFloor is the segment size (documents) below which scorch's merge
// planner treats segments as equal (scorch's default: 2000); lower, more
// small segments stay apart and searches of a large index slow down.
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

// Close waits for pending batches to be persisted, then closes the index.
// Live updates are applied without waiting for disk (scorch unsafe_batch)
// to keep writes fast; a batch lost in a crash is harmless because the
// recorded revision is lost with it and start-up catches up (D8).
func (ix *Index) Close() error {
	ix.cmp.stop()
	ix.mu.Lock()
	if ix.bi == nil {
		ix.mu.Unlock()
		return nil
	}
	ix.waitPersisted(FlushTimeout)
	err := ix.bi.Close()
	ix.bi = nil
	ix.mu.Unlock()
	// Closing scorch ended a running merge; wait for its goroutine.
	ix.cmp.wait()
	return err
}

// scorchOf is the scorch index under bi, or nil (bi nil or not scorch).
func scorchOf(bi bleve.Index) *scorch.Scorch {
	if bi == nil {
		return nil
	}
	adv, err := bi.Advanced()
	if err != nil {
		return nil
	}
	sc, _ := adv.(*scorch.Scorch)
	return sc
}

// waitPersisted polls scorch until its persisted epoch reaches the current
// root epoch (or the timeout passes).
func (ix *Index) waitPersisted(timeout time.Duration) {
	sc := scorchOf(ix.bi)
	if sc == nil {
		return
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		m := sc.StatsMap()
		cur, _ := m["CurRootEpoch"].(uint64)
		done, _ := m["LastPersistedEpoch"].(uint64)
		if done >= cur {
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

// Apply applies u atomically. A document already indexed with the same
// signature is left as it is: a write re-sends every version of the
// cookbook it touched, and usually only the new version and the one it
// displaced as latest differ from what is indexed.
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
	if err := ix.bi.Batch(batch); err != nil {
		return err
	}
	ix.scheduleCompaction()
	return nil
}

// docSigs adds the id and signature of every document of one cookbook to
// into. The signature is read from its doc values as the second sort key
// (loading each stored document for it was a fifth of an upsert's CPU).
// Pages follow document ids (search after the last one), not offsets: a
// search without scores stops once it has from+size matches, so its total
// cannot tell whether more pages follow.
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

// Build writes a fresh index of src at path: it builds into a sibling
// temporary folder and swaps it in only when complete, so an interrupted
// rebuild never leaves a half-built index in place. The caller must not
// hold the index at path open.
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
	// Batches are introduced without waiting for each to reach disk (the
	// persister overlaps with analysis); Close below waits for all of them,
	// and the folder is only swapped in after that.
	bi, err := bleve.NewUsing(tmp, NewMapping(), scorch.Name, scorch.Name, scorchConfig())
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
		doc, err := bleveDocument(bi.Mapping(), d)
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
