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
		for k, v := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
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
