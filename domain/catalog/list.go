package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/store"
)

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
	err := s.db.View(func(tx store.Tx) error {
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
		rf := newRowFilter(f.Tag, q)
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if !rf.mayKeep(v) {
				continue
			}
			var it Item
			if err := json.Unmarshal(v, &it); err != nil {
				return fmt.Errorf("list row %q: %w", k, err)
			}
			if it.CookbookID != curID {
				curID = it.CookbookID
				curLatest = latestListed(root, curID)
			}
			it.Latest = it.Version == curLatest
			if f.LatestOnly && !it.Latest {
				continue
			}
			if f.Tag != "" && !slices.Contains(it.Tags, f.Tag) {
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

// rowFilter tells, from a row's raw JSON, that a filter cannot keep it, so
// such rows are skipped undecoded (decoding every row of a large catalog
// was most of a filtered listing's time). It only ever rules rows out: the
// filter itself runs on the decoded rows. A row is an Item as json.Marshal
// writes it, so a tag is there as its JSON string, and each word of a
// plain ASCII query is there in some letter case, unless the row holds
// non-ASCII text (whose lower case may be ASCII).
type rowFilter struct {
	tag   []byte
	words [][]byte
}

func newRowFilter(tag, q string) rowFilter {
	var rf rowFilter
	if tag != "" {
		rf.tag, _ = json.Marshal(tag)
	}
	if plainQuery(q) {
		for w := range strings.FieldsSeq(q) {
			rf.words = append(rf.words, []byte(w))
		}
	}
	return rf
}

// plainQuery: lower-case letters, digits, spaces and . _ - only, which
// json.Marshal writes as they are.
func plainQuery(q string) bool {
	for i := range len(q) {
		c := q[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == ' ' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (rf rowFilter) mayKeep(row []byte) bool {
	if rf.tag != nil && !bytes.Contains(cookbookTags(row), rf.tag) {
		return false
	}
	if len(rf.words) == 0 {
		return true
	}
	if !isASCII(row) {
		return true
	}
	for _, w := range rf.words {
		if !containsFoldASCII(row, w) {
			return false
		}
	}
	return true
}

// Markers of an Item's encoding around its own tags. A quote inside a
// string is escaped, so neither occurs inside one.
var (
	tagsOpen      = []byte(`"tags":[`)
	tagsEnd       = []byte(`],"entry_count":`)
	entryCountKey = []byte(`"entry_count":`)
)

// cookbookTags returns the part of a list row that holds the cookbook's own
// tags, so a tag filter is not fooled by entries' tags (at 10,000 bundles a
// tag listing decoded ten times the rows it kept). json.Marshal writes an
// Item's fields in order: tags, when there are any, just before
// entry_count, and the entries' tags after it. A row of another layout is
// returned whole, which rules nothing out.
func cookbookTags(row []byte) []byte {
	count := bytes.Index(row, entryCountKey)
	if count < 0 {
		return row
	}
	open := bytes.Index(row[:count], tagsOpen)
	if open < 0 {
		// No tags of its own (omitempty).
		return nil
	}
	// The tags' closing bracket, a comma, then entry_count: the first such
	// sequence is the one ending the array, since none occurs in a string.
	if end := open + bytes.Index(row[open:], tagsEnd); end >= open && end+len(`],`) == count {
		return row[open : end+1]
	}
	return row
}

// containsFoldASCII reports whether s contains lower (lower-case ASCII),
// ignoring the case of ASCII letters in s.
func containsFoldASCII(s, lower []byte) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		j := 0
		for j < len(lower) && asciiLower(s[i+j]) == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

func asciiLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isASCII reports whether b holds only ASCII bytes.
func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
