package remote

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/platform/apperr"
)

// IndexType is the only remote index format understood.
const IndexType = "accords.cookbook.index.v1"

// Index is a parsed remote index. Items holds only the valid items; the
// rejected ones are listed in Invalid so one bad entry never hides the rest.
type Index struct {
	Type              string      `json:"type"`
	SourceID          string      `json:"source_id"`
	GeneratedAtUnixMS int64       `json:"generated_at_unix_ms,omitempty"`
	Items             []IndexItem `json:"items"`
	Invalid           []BadItem   `json:"-"`
}

// IndexItem is one installable cookbook version.
type IndexItem struct {
	CookbookID  string   `json:"cookbook_id"`
	Version     string   `json:"version"`
	Title       string   `json:"title,omitempty"`
	Summary     string   `json:"summary,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	DownloadURL string   `json:"download_url"`
	SHA256      string   `json:"sha256,omitempty"`

	semver *semver.Version
}

// BadItem reports an index item that was skipped and why.
type BadItem struct {
	Position   int    `json:"position"`
	CookbookID string `json:"cookbook_id,omitempty"`
	Version    string `json:"version,omitempty"`
	Field      string `json:"field,omitempty"`
	Reason     string `json:"reason"`
}

type rawIndex struct {
	Type              string            `json:"type"`
	SourceID          string            `json:"source_id"`
	GeneratedAtUnixMS json.Number       `json:"generated_at_unix_ms"`
	Items             []json.RawMessage `json:"items"`
}

type rawItem struct {
	CookbookID  string   `json:"cookbook_id"`
	Version     string   `json:"version"`
	Title       string   `json:"title"`
	Summary     string   `json:"summary"`
	Tags        []string `json:"tags"`
	DownloadURL string   `json:"download_url"`
	SHA256      string   `json:"sha256"`
}

func indexError(msg string) *apperr.Error {
	// A bad index is the source's fault, not a transient failure.
	return apperr.New(apperr.CodeRemoteFetchFailed, "%s", msg)
}

// ParseIndex decodes and validates an index; a bad item goes to Invalid
// instead of failing the index.
func ParseIndex(raw []byte, sourceID string) (*Index, error) {
	var ri rawIndex
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&ri); err != nil {
		return nil, indexError("failed decoding remote index").With("cause", err.Error())
	}
	if strings.TrimSpace(ri.Type) != IndexType {
		return nil, indexError("remote index type is invalid").With("type", truncate(ri.Type, 80)).With("expected", IndexType)
	}
	idx := &Index{Type: IndexType, SourceID: strings.TrimSpace(ri.SourceID), Items: []IndexItem{}, Invalid: []BadItem{}}
	if idx.SourceID == "" {
		idx.SourceID = sourceID
	}
	if ri.GeneratedAtUnixMS != "" {
		n, err := ri.GeneratedAtUnixMS.Int64()
		if err != nil {
			return nil, indexError("remote index generated_at_unix_ms must be an integer").With("cause", err.Error())
		}
		idx.GeneratedAtUnixMS = n
	}
	seen := map[string]int{}
	for i, rawItem := range ri.Items {
		it, bad := parseItem(i, rawItem)
		if bad != nil {
			idx.Invalid = append(idx.Invalid, *bad)
			continue
		}
		key := it.CookbookID + "\x00" + it.Version
		if first, dup := seen[key]; dup {
			idx.Invalid = append(idx.Invalid, BadItem{Position: i, CookbookID: it.CookbookID, Version: it.Version,
				Field: "version", Reason: fmt.Sprintf("duplicate of item %d (same cookbook_id and version)", first)})
			continue
		}
		seen[key] = i
		idx.Items = append(idx.Items, it)
	}
	return idx, nil
}

func parseItem(pos int, raw json.RawMessage) (IndexItem, *BadItem) {
	bad := func(field, reason string, ri rawItem) *BadItem {
		return &BadItem{Position: pos, CookbookID: truncate(strings.TrimSpace(ri.CookbookID), 128),
			Version: truncate(strings.TrimSpace(ri.Version), 128), Field: field, Reason: reason}
	}
	var ri rawItem
	if err := json.Unmarshal(raw, &ri); err != nil {
		// Salvage the ids for the report when only another field is wrong.
		var ids struct {
			CookbookID any `json:"cookbook_id"`
			Version    any `json:"version"`
		}
		_ = json.Unmarshal(raw, &ids)
		r := rawItem{}
		r.CookbookID, _ = ids.CookbookID.(string)
		r.Version, _ = ids.Version.(string)
		field := ""
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			field = te.Field
		}
		return IndexItem{}, bad(field, "item is not a valid index item: "+err.Error(), r)
	}
	it := IndexItem{
		CookbookID:  strings.TrimSpace(ri.CookbookID),
		Version:     strings.TrimSpace(ri.Version),
		Title:       strings.TrimSpace(ri.Title),
		Summary:     strings.TrimSpace(ri.Summary),
		DownloadURL: strings.TrimSpace(ri.DownloadURL),
		SHA256:      strings.ToLower(strings.TrimSpace(ri.SHA256)),
	}
	for _, t := range ri.Tags {
		if t = strings.TrimSpace(t); t != "" {
			it.Tags = append(it.Tags, t)
		}
	}
	switch {
	case it.CookbookID == "":
		return IndexItem{}, bad("cookbook_id", "remote index item missing required fields", ri)
	case it.Version == "":
		return IndexItem{}, bad("version", "remote index item missing required fields", ri)
	case it.DownloadURL == "":
		return IndexItem{}, bad("download_url", "remote index item missing required fields", ri)
	case !catalog.ValidID(it.CookbookID):
		return IndexItem{}, bad("cookbook_id", "cookbook_id must match "+catalog.IDPattern, ri)
	}
	v, ok := catalog.ParseVersion(it.Version)
	if !ok {
		return IndexItem{}, bad("version", "version must be a semantic version (MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD])", ri)
	}
	it.semver = v
	if u, ok := parseHTTPURL(it.DownloadURL); !ok {
		return IndexItem{}, bad("download_url", "remote download_url must be http(s)", ri)
	} else if u.User != nil {
		return IndexItem{}, bad("download_url", "remote download_url must not contain credentials", ri)
	}
	if it.SHA256 != "" && !validHexSHA256(it.SHA256) {
		return IndexItem{}, bad("sha256", "sha256 must be 64 hexadecimal characters", ri)
	}
	return it, nil
}

func validHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// restrictDownloads moves items whose download_url src does not allow to
// Invalid, so an index cannot send installs to any host.
func (idx *Index) restrictDownloads(src Source) {
	kept := idx.Items[:0]
	for _, it := range idx.Items {
		du, ok := parseHTTPURL(it.DownloadURL)
		if !ok { // ParseIndex admits only http(s) URLs
			continue
		}
		if downloadAllowed(src, du) {
			kept = append(kept, it)
			continue
		}
		reason := "download_url points to " + truncate(strings.ToLower(du.Host), 128) + ", which this source does not allow (download_hosts; by default only the index URL's origin)"
		idx.Invalid = append(idx.Invalid, BadItem{Position: -1, CookbookID: it.CookbookID, Version: it.Version, Field: "download_url", Reason: reason})
	}
	idx.Items = kept
}

// Rejected lists the invalid items of cookbookID.
func (idx *Index) Rejected(cookbookID string) []BadItem {
	out := []BadItem{}
	for _, b := range idx.Invalid {
		if b.CookbookID == cookbookID {
			out = append(out, b)
		}
	}
	return out
}

// Filter returns the items whose id, version, title, summary or tags contain
// query (lowercased); an empty query keeps everything.
func (idx *Index) Filter(query string) []IndexItem {
	q := strings.ToLower(strings.TrimSpace(query))
	out := []IndexItem{}
	for _, it := range idx.Items {
		if q == "" || strings.Contains(strings.ToLower(strings.Join([]string{it.CookbookID, it.Version, it.Title, it.Summary, strings.Join(it.Tags, " ")}, "\n")), q) {
			out = append(out, it)
		}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
