package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/store"
	bolt "go.etcd.io/bbolt"
)

// Layout: one flat keyspace inside the top-level "catalog" bucket. Prefixed
// keys instead of nested buckets keep a write transaction to a handful of
// dirty pages (measured: nested per-cookbook buckets made a commit several
// times slower at 10,000 cookbooks).
//
//	rev                      uint64: catalog revision, bumped by every write tx
//	builtin_manifest         content hash of the built-in set last seeded
//	b/<id>\x00<version>      canonical bundle JSON (the stored form)
//	i/<id>\x00<version>      Item JSON (list rows, no bundle decode needed)
//	l/<rev>                  JSON list of cookbook ids touched at that revision
//	s/<id>\x00<version>      SeedRecord JSON of built-in bundles
//
// Ids cannot contain NUL, so "<id>\x00" is an exact per-cookbook prefix and
// the versions of one cookbook are adjacent: "latest" reads only those keys.
var (
	keyRev             = []byte("rev")
	keyBuiltinManifest = []byte("builtin_manifest")
)

const (
	pfxBundle = "b/"
	pfxItem   = "i/"
	pfxChange = "l/"
	pfxSeed   = "s/"
)

// MaxChanges is how many revisions of the change log are kept; an index
// further behind than that is rebuilt instead of caught up.
const MaxChanges = 4096

func refKey(pfx, id, version string) []byte { return []byte(pfx + id + "\x00" + version) }
func bundleKey(id, version string) []byte   { return refKey(pfxBundle, id, version) }
func itemKey(id, version string) []byte     { return refKey(pfxItem, id, version) }
func seedKey(id, version string) []byte     { return refKey(pfxSeed, id, version) }
func changeKey(rev uint64) []byte           { return append([]byte(pfxChange), store.U64(rev)...) }

// splitRefKey returns the id and version of a b/, i/ or s/ key.
func splitRefKey(k []byte) (string, string) {
	rest := string(k[2:])
	id, version, _ := strings.Cut(rest, "\x00")
	return id, version
}

// versionsOf calls fn for each stored version of one cookbook.
func versionsOf(root *bolt.Bucket, id string, fn func(version string, raw []byte) error) error {
	prefix := []byte(pfxBundle + id + "\x00")
	c := root.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := fn(string(k[len(prefix):]), v); err != nil {
			return err
		}
	}
	return nil
}

// latestVersion scans one cookbook's version keys (never the catalog).
func latestVersion(root *bolt.Bucket, id string) string {
	best := ""
	_ = versionsOf(root, id, func(v string, _ []byte) error {
		if best == "" || CompareVersions(v, best) > 0 {
			best = v
		}
		return nil
	})
	return best
}

// Item is a list row: one cookbook version with its entries' summaries.
type Item struct {
	CookbookID  string      `json:"cookbook_id"`
	Version     string      `json:"version"`
	Title       string      `json:"title"`
	Description string      `json:"description,omitempty"`
	Tags        []string    `json:"tags,omitempty"`
	EntryCount  int         `json:"entry_count"`
	ContentHash string      `json:"content_hash"`
	Entries     []ItemEntry `json:"entries,omitempty"`
	// Latest is true for the highest version of the cookbook.
	Latest bool `json:"latest"`
}

// ItemEntry summarises one entry.
type ItemEntry struct {
	EntryID     string   `json:"entry_id"`
	EntryType   string   `json:"entry_type"`
	Title       string   `json:"title,omitempty"`
	ConnectorID string   `json:"connector_id,omitempty"`
	Verb        string   `json:"verb,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

func itemOf(b *Bundle, hash string) Item {
	it := Item{CookbookID: b.CookbookID, Version: b.Version, Title: b.Title, Description: b.Description,
		Tags: b.Tags, EntryCount: len(b.Entries), ContentHash: hash}
	for i := range b.Entries {
		e := &b.Entries[i]
		it.Entries = append(it.Entries, ItemEntry{EntryID: e.EntryID, EntryType: e.EntryType, Title: e.Title,
			ConnectorID: e.IndexConnector(), Verb: e.Verb, Tags: e.Tags})
	}
	return it
}

// Options configure Open.
type Options struct {
	Logger *slog.Logger
	// Progress receives rebuild progress when Open has to rebuild.
	Progress index.Progress
}

// OpenReport says what Open did with the index.
type OpenReport struct {
	Rebuilt  bool   `json:"rebuilt"`
	Reason   string `json:"reason,omitempty"`
	CaughtUp int    `json:"caught_up_revisions,omitempty"`
	Rev      uint64 `json:"rev"`
}

// Service is the catalog: bundles in bbolt, entries in the bleve index.
// It is safe for concurrent use.
type Service struct {
	db        *store.DB
	indexPath string
	logger    *slog.Logger

	// writeMu serialises writes so index updates apply in revision order.
	writeMu sync.Mutex
	// idxMu guards idx, which Reindex swaps.
	idxMu sync.RWMutex
	idx   *index.Index

	storeRev atomic.Uint64
	indexRev atomic.Uint64
	report   OpenReport
}

// Open opens the catalog on db with its index at indexPath, checking the
// index against the catalog revision and rebuilding or catching it up when
// it is missing, corrupt, from another mapping, ahead or behind (D8).
func Open(ctx context.Context, db *store.DB, indexPath string, opts Options) (*Service, error) {
	s := &Service{db: db, indexPath: indexPath, logger: opts.Logger}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		s.storeRev.Store(readU64(root.Get(keyRev)))
		return nil
	}); err != nil {
		return nil, fmt.Errorf("open catalog: %w", err)
	}
	rep, err := s.syncIndex(ctx, opts.Progress)
	if err != nil {
		return nil, err
	}
	s.report = rep
	return s, nil
}

// Report says what Open did with the index.
func (s *Service) Report() OpenReport { return s.report }

// DBPath is the database file (reported as root_dir by list).
func (s *Service) DBPath() string { return s.db.Path() }

// IndexPath is the index folder.
func (s *Service) IndexPath() string { return s.indexPath }

// Rev is the current catalog revision.
func (s *Service) Rev() uint64 { return s.storeRev.Load() }

// Close closes the index (the database belongs to the caller).
func (s *Service) Close() error {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.idx == nil {
		return nil
	}
	err := s.idx.Close()
	s.idx = nil
	return err
}

func catalogBucket(tx *bolt.Tx) (*bolt.Bucket, error) {
	if tx.Writable() {
		return tx.CreateBucketIfNotExists(store.BucketCatalog)
	}
	b := tx.Bucket(store.BucketCatalog)
	if b == nil {
		return nil, errors.New("catalog bucket missing")
	}
	return b, nil
}

func readU64(raw []byte) uint64 {
	if len(raw) != 8 {
		return 0
	}
	var n uint64
	for _, c := range raw {
		n = n<<8 | uint64(c)
	}
	return n
}

// syncIndex brings the index in line with the store at start-up.
func (s *Service) syncIndex(ctx context.Context, progress index.Progress) (OpenReport, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	want := s.storeRev.Load()
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
		if err := s.rebuildLocked(ctx, progress); err != nil {
			return OpenReport{}, err
		}
		return OpenReport{Rebuilt: true, Reason: reason, Rev: s.indexRev.Load()}, nil
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
		if err := s.rebuildLocked(ctx, progress); err != nil {
			return OpenReport{}, err
		}
		return OpenReport{Rebuilt: true, Reason: "index ahead of the database", Rev: s.indexRev.Load()}, nil
	}
	n, err := s.catchUpLocked(ctx)
	if err != nil {
		s.logger.Warn("catalog index catch-up failed; rebuilding", "error", err.Error())
		if err := s.rebuildLocked(ctx, progress); err != nil {
			return OpenReport{}, err
		}
		return OpenReport{Rebuilt: true, Reason: "index behind the database", Rev: s.indexRev.Load()}, nil
	}
	return OpenReport{CaughtUp: n, Reason: "index behind the database", Rev: s.indexRev.Load()}, nil
}

var errChangesPruned = errors.New("change log does not reach back to the index revision")

// catchUpLocked re-indexes the cookbooks changed since the index revision.
func (s *Service) catchUpLocked(ctx context.Context) (int, error) {
	from := s.indexRev.Load()
	var upd index.Update
	err := s.db.View(func(tx *bolt.Tx) error {
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
func docsFor(root *bolt.Bucket, touched map[string]bool) (index.Update, error) {
	var upd index.Update
	ids := make([]string, 0, len(touched))
	for id := range touched {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
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
func cookbookDocs(root *bolt.Bucket, id string) ([]index.Doc, error) {
	latest := latestVersion(root, id)
	var docs []index.Doc
	err := versionsOf(root, id, func(v string, raw []byte) error {
		b, err := decodeForIndex(raw)
		if err != nil {
			return fmt.Errorf("version %s: %w", v, err)
		}
		docs = append(docs, bundleDocs(b, v == latest)...)
		return nil
	})
	return docs, err
}

// decodeForIndex decodes only what the index needs from a stored bundle:
// the searchable strings, and for plan entries without a connector the
// steps' connector ids. Request and plan payloads, bindings and schemas
// are skipped, which makes a full reindex markedly cheaper than decoding
// every bundle whole.
func decodeForIndex(raw []byte) (*Bundle, error) {
	m, err := objectOf(raw, "bundle")
	if err != nil {
		return nil, err
	}
	d := &fieldDecoder{m: m}
	b := &Bundle{}
	d.get("cookbook_id", &b.CookbookID)
	d.get("version", &b.Version)
	d.get("title", &b.Title)
	var entries []json.RawMessage
	d.get("entries", &entries)
	if d.err != nil {
		return nil, d.err
	}
	for i, er := range entries {
		em, err := objectOf(er, fmt.Sprintf("entries[%d]", i))
		if err != nil {
			return nil, err
		}
		ed := &fieldDecoder{m: em}
		var e Entry
		ed.get("entry_id", &e.EntryID)
		ed.get("entry_type", &e.EntryType)
		ed.get("title", &e.Title)
		ed.get("description", &e.Description)
		ed.get("tags", &e.Tags)
		ed.get("connector_id", &e.ConnectorID)
		ed.get("verb", &e.Verb)
		if e.ConnectorID == "" && (e.EntryType == TypeRecipePlan || e.EntryType == TypeTemplatePlan) {
			key := "plan"
			if e.EntryType == TypeTemplatePlan {
				key = "base_plan"
			}
			var p map[string]any
			ed.get(key, &p)
			e.Plan, e.BasePlan = p, p
		}
		if ed.err != nil {
			return nil, ed.err
		}
		b.Entries = append(b.Entries, e)
	}
	return b, nil
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

// Reindex rebuilds the whole index from the store (the reindex command and
// automatic repair use it). progress receives documents done of total.
func (s *Service) Reindex(ctx context.Context, progress index.Progress) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.rebuildLocked(ctx, progress)
}

func (s *Service) rebuildLocked(ctx context.Context, progress index.Progress) error {
	s.idxMu.Lock()
	defer s.idxMu.Unlock()
	if s.idx != nil {
		s.idx.Close()
		s.idx = nil
	}
	// One read transaction gives a consistent snapshot to index; the
	// revision recorded is the one of that snapshot.
	err := s.db.View(func(tx *bolt.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		rev := readU64(root.Get(keyRev))
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
				docs, err := cookbookDocs(root, id)
				if err != nil {
					// One unreadable bundle must not take search down: skip
					// it and say so.
					s.logger.Error("skipping unreadable cookbook while indexing", "cookbook_id", id, "error", err.Error())
					continue
				}
				for _, d := range docs {
					if err := yield(d); err != nil {
						return err
					}
				}
			}
			return nil
		}}
		if err := index.Build(ctx, s.indexPath, src, progress); err != nil {
			return err
		}
		s.indexRev.Store(rev)
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuild catalog index: %w", err)
	}
	ix, err := index.Open(s.indexPath)
	if err != nil {
		return fmt.Errorf("open rebuilt catalog index: %w", err)
	}
	s.idx = ix
	return nil
}

// fresh makes sure the index reflects the latest committed revision before
// a read (a failed index update after a commit is repaired here).
func (s *Service) fresh(ctx context.Context) error {
	if s.indexRev.Load() == s.storeRev.Load() {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.indexRev.Load() == s.storeRev.Load() {
		return nil
	}
	if _, err := s.catchUpLocked(ctx); err != nil {
		if !errors.Is(err, errChangesPruned) {
			s.logger.Warn("catalog index catch-up failed; rebuilding", "error", err.Error())
		}
		return s.rebuildLocked(ctx, nil)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Write transactions

// writeTx tracks what one bbolt transaction changed.
type writeTx struct {
	tx      *bolt.Tx
	root    *bolt.Bucket
	touched map[string]bool
	// created holds cookbooks that had no version before this transaction:
	// the index has no documents of theirs to find and delete.
	created map[string]bool
}

// stored returns the stored bytes of id@version, or nil.
func (w *writeTx) stored(id, version string) []byte { return w.root.Get(bundleKey(id, version)) }

func (w *writeTx) put(b *Bundle, canonical []byte, hash string) error {
	if !w.touched[b.CookbookID] && latestVersion(w.root, b.CookbookID) == "" {
		w.created[b.CookbookID] = true
	}
	if err := w.root.Put(bundleKey(b.CookbookID, b.Version), canonical); err != nil {
		return err
	}
	raw, err := json.Marshal(itemOf(b, hash))
	if err != nil {
		return err
	}
	if err := w.root.Put(itemKey(b.CookbookID, b.Version), raw); err != nil {
		return err
	}
	w.touched[b.CookbookID] = true
	return nil
}

func (w *writeTx) delete(id, version string) error {
	if err := w.root.Delete(bundleKey(id, version)); err != nil {
		return err
	}
	if err := w.root.Delete(itemKey(id, version)); err != nil {
		return err
	}
	w.touched[id] = true
	return nil
}

// write runs fn in one bbolt transaction; if it touched cookbooks, the same
// transaction bumps the revision and logs the change, and after the commit
// the index is updated to that revision. A failed index update leaves the
// committed data in place and is repaired before the next read.
func (s *Service) write(ctx context.Context, fn func(w *writeTx) error) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var upd index.Update
	var newRev uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		w := &writeTx{tx: tx, root: root, touched: map[string]bool{}, created: map[string]bool{}}
		if err := fn(w); err != nil {
			return err
		}
		if len(w.touched) == 0 {
			return nil
		}
		newRev = readU64(root.Get(keyRev)) + 1
		if err := root.Put(keyRev, store.U64(newRev)); err != nil {
			return err
		}
		ids := make([]string, 0, len(w.touched))
		for id := range w.touched {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		raw, _ := json.Marshal(ids)
		if err := root.Put(changeKey(newRev), raw); err != nil {
			return err
		}
		if newRev > MaxChanges {
			if err := root.Delete(changeKey(newRev - MaxChanges)); err != nil {
				return err
			}
		}
		upd, err = docsFor(root, w.touched)
		upd.Rev = newRev
		for id := range w.created {
			upd.Created = append(upd.Created, id)
		}
		return err
	})
	if err != nil {
		return err
	}
	if newRev == 0 {
		return nil
	}
	s.storeRev.Store(newRev)
	if s.indexRev.Load() != newRev-1 {
		// The index missed an earlier revision; catch up over the log,
		// which covers this one too.
		if _, err := s.catchUpLocked(ctx); err != nil {
			s.logger.Error("catalog index catch-up failed; it will be repaired on the next read", "error", err.Error())
		}
		return nil
	}
	if err := s.applyLocked(ctx, upd); err != nil {
		s.logger.Error("catalog index update failed; it will be repaired on the next read", "rev", newRev, "error", err.Error())
	}
	return nil
}

// ---------------------------------------------------------------------------
// Reads

// Stored is a bundle as stored: decoded, plus its canonical bytes and hash.
type Stored struct {
	Bundle *Bundle
	Raw    json.RawMessage
	Hash   string
}

func notFoundCookbook(id string) *apperr.Error {
	return apperr.New(apperr.CodeCatalogNotFound, "cookbook not found").With("cookbook_id", id)
}

func notFoundVersion(id, version string) *apperr.Error {
	return apperr.New(apperr.CodeCatalogNotFound, "cookbook version not found").With("cookbook_id", id).With("version", version)
}

// resolve finds the stored bytes of id@version ("" = latest) in tx.
func resolve(root *bolt.Bucket, id, version string) (string, []byte, error) {
	if version == "" {
		version = latestVersion(root, id)
		if version == "" {
			return "", nil, notFoundCookbook(id)
		}
	}
	raw := root.Get(bundleKey(id, version))
	if raw == nil {
		if latestVersion(root, id) == "" {
			return "", nil, notFoundCookbook(id)
		}
		return "", nil, notFoundVersion(id, version)
	}
	return version, raw, nil
}

func checkRef(id, version string) (string, string, error) {
	id = strings.TrimSpace(id)
	version = strings.TrimSpace(version)
	if err := CheckCookbookID(id); err != nil {
		return "", "", err
	}
	if version != "" {
		if err := CheckVersion(version); err != nil {
			return "", "", err
		}
	}
	return id, version, nil
}

// Get returns id@version, or the latest version when version is empty.
func (s *Service) Get(ctx context.Context, id, version string) (*Stored, error) {
	id, version, err := checkRef(id, version)
	if err != nil {
		return nil, err
	}
	var out *Stored
	err = s.db.View(func(tx *bolt.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		v, raw, err := resolve(root, id, version)
		if err != nil {
			return err
		}
		b, derr := decodeBundle(raw)
		if derr != nil {
			return schemaErr("stored bundle is not valid json").With("cookbook_id", id).With("version", v).With("cause", derr.Error())
		}
		out = &Stored{Bundle: b, Raw: append(json.RawMessage(nil), raw...), Hash: HashBytes(raw)}
		return nil
	})
	if err != nil {
		return nil, wrapStoreErr("get cookbook", err)
	}
	return out, nil
}

func wrapStoreErr(op string, err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apperr.Internal(op, err)
}

// EntryResult is a recipe_get answer.
type EntryResult struct {
	CookbookID string          `json:"cookbook_id"`
	Version    string          `json:"version"`
	Entry      json.RawMessage `json:"entry"`
}

// Entry returns one entry of id@version (latest when version is empty).
func (s *Service) Entry(ctx context.Context, id, version, entryID string) (*EntryResult, error) {
	entryID = strings.TrimSpace(entryID)
	st, err := s.Get(ctx, id, version)
	if err != nil {
		return nil, err
	}
	e := st.Bundle.Entry(entryID)
	if e == nil {
		return nil, apperr.New(apperr.CodeCatalogNotFound, "entry not found in cookbook").
			With("cookbook_id", st.Bundle.CookbookID).With("version", st.Bundle.Version).With("entry_id", clip(entryID))
	}
	raw, err := json.Marshal(e)
	if err != nil {
		return nil, apperr.Internal("encode entry", err)
	}
	return &EntryResult{CookbookID: st.Bundle.CookbookID, Version: st.Bundle.Version, Entry: raw}, nil
}

// ListFilter narrows List. Query is a case-insensitive substring of the id,
// title, description or tags; CookbookID and Tag are exact.
type ListFilter struct {
	Query      string
	CookbookID string
	Tag        string
	// LatestOnly keeps only the highest version of each cookbook.
	LatestOnly bool
	// Limit caps the number of cookbooks (all their matching versions count
	// as one) in a page; 0 means no cap.
	Limit int
	// After resumes a paged listing after this cookbook id (a NextCursor).
	After string
}

// Page is one page of a listing. NextCursor is the After of the next page,
// empty on the last one.
type Page struct {
	Items      []Item `json:"items"`
	NextCursor string `json:"next_cursor"`
}

// List returns every stored version matching f, sorted by cookbook id then
// version (ascending).
func (s *Service) List(ctx context.Context, f ListFilter) ([]Item, error) {
	f.Limit, f.After = 0, ""
	p, err := s.ListPage(ctx, f)
	return p.Items, err
}

// ListPage returns the versions matching f of at most f.Limit cookbooks
// after f.After, so a large catalog is listed in bounded memory.
func (s *Service) ListPage(ctx context.Context, f ListFilter) (Page, error) {
	q := strings.ToLower(strings.TrimSpace(f.Query))
	f.CookbookID = strings.TrimSpace(f.CookbookID)
	f.Tag = strings.TrimSpace(f.Tag)
	items := []Item{}
	next := ""
	err := s.db.View(func(tx *bolt.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		c := root.Cursor()
		prefix := []byte(pfxItem)
		if f.CookbookID != "" {
			prefix = []byte(pfxItem + f.CookbookID + "\x00")
		}
		start := prefix
		if after := strings.TrimSpace(f.After); after != "" && f.CookbookID == "" {
			// Row keys are pfxItem + id + "\x00" + version: "\x01" sorts
			// after every row of the cursor's cookbook.
			start = []byte(pfxItem + after + "\x01")
		}
		curID, curLatest := "", ""
		included, lastIncluded := 0, ""
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var it Item
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("list row %q: %w", k, err)
			}
			if it.CookbookID != curID {
				curID, curLatest = it.CookbookID, ""
				curLatest = latestVersion(root, curID)
			}
			it.Latest = it.Version == curLatest
			if f.LatestOnly && !it.Latest {
				continue
			}
			if f.Tag != "" && !contains(it.Tags, f.Tag) {
				continue
			}
			if q != "" && !strings.Contains(strings.ToLower(it.CookbookID), q) && !strings.Contains(strings.ToLower(it.Title), q) &&
				!strings.Contains(strings.ToLower(it.Description), q) && !strings.Contains(strings.ToLower(strings.Join(it.Tags, " ")), q) {
				continue
			}
			if it.CookbookID != lastIncluded {
				if f.Limit > 0 && included == f.Limit {
					next = lastIncluded
					break
				}
				included, lastIncluded = included+1, it.CookbookID
			}
			items = append(items, it)
		}
		return nil
	})
	if err != nil {
		return Page{}, wrapStoreErr("list cookbooks", err)
	}
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].CookbookID != items[j].CookbookID {
			return items[i].CookbookID < items[j].CookbookID
		}
		return CompareVersions(items[i].Version, items[j].Version) < 0
	})
	// Rows of one cookbook are adjacent and ascending: the last is latest.
	out := items[:0]
	for i := range items {
		items[i].Latest = i == len(items)-1 || items[i+1].CookbookID != items[i].CookbookID
		if f.LatestOnly && !items[i].Latest {
			continue
		}
		out = append(out, items[i])
	}
	return Page{Items: out, NextCursor: next}, nil
}

// Search runs a recipe search on the index (decision D7). It is the API the
// route resolver's search fallback uses: by default only the latest version
// of each cookbook is searched, so two versions of one entry never compete.
func (s *Service) Search(ctx context.Context, q index.Query) (index.Result, error) {
	if err := s.fresh(ctx); err != nil {
		return index.Result{}, apperr.Internal("refresh catalog index", err)
	}
	s.idxMu.RLock()
	defer s.idxMu.RUnlock()
	if s.idx == nil {
		return index.Result{}, apperr.Internal("search recipes", errors.New("catalog index is closed"))
	}
	res, err := s.idx.Search(ctx, q)
	if err != nil {
		return index.Result{}, apperr.Internal("search recipes", err)
	}
	return res, nil
}
