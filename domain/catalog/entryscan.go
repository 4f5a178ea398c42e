package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	segjson "github.com/segmentio/encoding/json"
)

// decodeBundleEntry decodes the cookbook id and version of a stored bundle
// and only its entry entryID (the first with that id, nil when none):
// rendering needs one entry. Finding it by decoding the bundle into maps
// and raw messages read the bytes five or six times, which was most of a
// render's own CPU; one pass of locateEntry finds the same entry. Bytes it
// does not take apart plainly go to decodeBundleEntrySlow, whose answers
// (and errors) it reproduces.
func decodeBundleEntry(raw []byte, entryID string) (cookbookID, version string, e *Entry, err error) {
	if !json.Valid(raw) {
		return decodeBundleEntrySlow(raw, entryID)
	}
	return decodeValidBundleEntry(raw, entryID)
}

// decodeValidBundleEntry is decodeBundleEntry for bytes known to be valid
// JSON (an unpacked frame: see template), without the validity scan.
func decodeValidBundleEntry(raw []byte, entryID string) (cookbookID, version string, e *Entry, err error) {
	loc, ok := locateEntry(raw, entryID)
	if !ok {
		return decodeBundleEntrySlow(raw, entryID)
	}
	if loc.entry == nil {
		return loc.cookbookID, loc.version, nil, nil
	}
	if got, ok := decodePlainEntry(loc.entry); ok {
		return loc.cookbookID, loc.version, &got, nil
	}
	got, err := decodeEntry(loc.entry, fmt.Sprintf("entries[%d].", loc.index))
	if err != nil {
		return "", "", nil, err
	}
	return loc.cookbookID, loc.version, &got, nil
}

// entryWire and bindingWire are an entry and a binding as encoding/json
// decodes them into the fields decodeEntry fills, one field at a time.
type entryWire struct {
	EntryID           string         `json:"entry_id"`
	EntryType         string         `json:"entry_type"`
	Title             string         `json:"title"`
	Description       string         `json:"description"`
	Tags              []string       `json:"tags"`
	ConnectorID       string         `json:"connector_id"`
	Verb              string         `json:"verb"`
	PolicyVersion     string         `json:"policy_version"`
	Request           map[string]any `json:"request"`
	Plan              map[string]any `json:"plan"`
	PlanInputDefaults map[string]any `json:"plan_input_defaults"`
	BaseRequest       map[string]any `json:"base_request"`
	BasePlan          map[string]any `json:"base_plan"`
	InputSchema       map[string]any `json:"input_schema"`
	Bindings          []bindingWire  `json:"bindings"`
}

type bindingWire struct {
	TargetPath string `json:"target_path"`
	InputKey   string `json:"input_key"`
	Required   *bool  `json:"required"`
	Default    any    `json:"default"`
}

// decodePlainEntry is decodeEntry in one pass of encoding/json instead of
// one per field (decodeEntry was half of a render of a template not
// cached), for the entries whose answer is plainly the same: every key of
// the entry and of its bindings a known one, spelled exactly and once, and
// every binding an object. Anything else, and any error, is declined
// (false) and left to decodeEntry, whose answers and errors a fuzz target
// compares this path with.
func decodePlainEntry(raw []byte) (Entry, bool) {
	if !plainKeys(raw) {
		return Entry{}, false
	}
	var w entryWire
	if err := unmarshalEntry(raw, &w); err != nil {
		return Entry{}, false
	}
	e := Entry{EntryID: w.EntryID, EntryType: w.EntryType, Title: w.Title, Description: w.Description, Tags: w.Tags,
		ConnectorID: w.ConnectorID, Verb: w.Verb, PolicyVersion: w.PolicyVersion, Request: w.Request, Plan: w.Plan,
		PlanInputDefaults: w.PlanInputDefaults, BaseRequest: w.BaseRequest, BasePlan: w.BasePlan, InputSchema: w.InputSchema}
	for _, b := range w.Bindings {
		e.Bindings = append(e.Bindings, Binding{TargetPath: b.TargetPath, InputKey: b.InputKey, Required: b.Required, Default: b.Default})
	}
	return e, true
}

// unmarshalEntry decodes an entry's bytes (valid JSON, every key known and
// spelled exactly) as encoding/json does, through segmentio's decoder
// (go-sdk's own), which is faster at it: a render of a template not cached
// decodes its entry into maps of values. Whatever segmentio refuses goes
// to encoding/json, whose error decides; the tests and the fuzz target
// holding decodePlainEntry to decodeEntry cover both.
func unmarshalEntry(raw []byte, w *entryWire) error {
	if segjson.Unmarshal(raw, w) == nil {
		return nil
	}
	*w = entryWire{}
	return json.Unmarshal(raw, w)
}

// plainKeys reports whether the entry object raw (valid JSON) has only
// known keys, each spelled exactly (no escapes) and once, and whether its
// "bindings", when an array, holds only objects with the same property.
func plainKeys(raw []byte) bool {
	s := scanner{b: raw}
	return s.knownKeys(entryKeys, true)
}

// knownKeys reads one object whose keys must all be in known, each once;
// with bindings, an array under "bindings" must hold only such objects
// with bindingKeys. It reports false for anything else.
func (s *scanner) knownKeys(known []string, bindings bool) bool {
	if !s.open('{') {
		return false
	}
	var seen uint64 // known has fewer than 64 keys
	for more := s.first('}'); more; more = s.next('}') {
		key, ok := s.plainBytes()
		if !ok || !s.colon() {
			return false
		}
		k := slices.IndexFunc(known, func(name string) bool { return string(key) == name })
		if k < 0 || seen&(1<<k) != 0 {
			return false
		}
		seen |= 1 << k
		if bindings && string(key) == "bindings" && s.open('[') {
			for more := s.first(']'); more; more = s.next(']') {
				if !s.knownKeys(bindingKeys, false) {
					return false
				}
			}
			continue
		}
		s.skip()
	}
	return true
}

// decodeBundleEntrySlow is decodeBundleEntry by full decoding.
func decodeBundleEntrySlow(raw []byte, entryID string) (cookbookID, version string, e *Entry, err error) {
	m, err := objectOf(raw, "bundle")
	if err != nil {
		return "", "", nil, err
	}
	d := &fieldDecoder{m: m}
	d.get("cookbook_id", &cookbookID)
	d.get("version", &version)
	var entries []json.RawMessage
	d.get("entries", &entries)
	if d.err != nil {
		return "", "", nil, d.err
	}
	if len(entries) > MaxEntries {
		return "", "", nil, tooMany("bundle.entries", len(entries), MaxEntries)
	}
	for i, er := range entries {
		var id struct {
			EntryID string `json:"entry_id"`
		}
		if json.Unmarshal(er, &id) != nil || id.EntryID != entryID {
			continue
		}
		got, err := decodeEntry(er, fmt.Sprintf("entries[%d].", i))
		if err != nil {
			return "", "", nil, err
		}
		return cookbookID, version, &got, nil
	}
	return cookbookID, version, nil, nil
}

// located is what locateEntry found.
type located struct {
	cookbookID, version string
	entry               []byte // nil: no entry has the id
	index               int
}

// locateEntry walks valid JSON once. It answers (ok) only when the answer
// is plainly the slow decoder's: an object whose "cookbook_id" and
// "version" are absent or strings without escapes, whose "entries" is
// absent or an array of at most MaxEntries objects, each with its
// "entry_id" absent or a string without escapes. A repeated or escaped key
// at either level, a key that encoding/json might fold to "entry_id", or
// anything else makes it decline.
func locateEntry(raw []byte, entryID string) (located, bool) {
	var out located
	s := scanner{b: raw}
	if !s.open('{') {
		return out, false
	}
	var seen [3]bool // cookbook_id, version, entries
	found := false
	for more := s.first('}'); more; more = s.next('}') {
		key, ok := s.plainBytes()
		if !ok || !s.colon() {
			return out, false
		}
		var k int
		switch string(key) {
		case "cookbook_id":
			k = 0
		case "version":
			k = 1
		case "entries":
			k = 2
		default:
			k = -1
		}
		if k >= 0 {
			if seen[k] {
				return out, false
			}
			seen[k] = true
		}
		switch k {
		case 0:
			if out.cookbookID, ok = s.plainString(); !ok {
				return out, false
			}
		case 1:
			if out.version, ok = s.plainString(); !ok {
				return out, false
			}
		case 2:
			if !s.open('[') {
				return out, false
			}
			n := 0
			for more := s.first(']'); more; more = s.next(']') {
				if n++; n > MaxEntries {
					return out, false
				}
				start := s.i
				id, ok := s.entryID()
				if !ok {
					return out, false
				}
				if !found && string(id) == entryID {
					found, out.entry, out.index = true, raw[start:s.i], n-1
				}
			}
		default:
			s.skip()
		}
	}
	return out, true
}

// scanner reads JSON already known to be valid.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// open consumes c ('{' or '['), reporting whether it was there.
func (s *scanner) open(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// first reports whether a member follows the opening bracket (false: the
// closing one, consumed).
func (s *scanner) first(closing byte) bool {
	s.ws()
	if s.b[s.i] == closing {
		s.i++
		return false
	}
	return true
}

// next consumes the comma before another member (true) or the closing
// bracket (false).
func (s *scanner) next(closing byte) bool {
	s.ws()
	c := s.b[s.i]
	s.i++
	return c == ','
}

func (s *scanner) colon() bool {
	s.ws()
	if s.b[s.i] != ':' {
		return false
	}
	s.i++
	return true
}

// plainString reads a string without escapes, of valid UTF-8 (which
// encoding/json would change); ok is false for any other value (left
// unread) or string.
func (s *scanner) plainString() (string, bool) {
	b, ok := s.plainBytes()
	return string(b), ok
}

// plainBytes is plainString's bytes, in s.b: keys are only compared, and
// making each a string was a fifth of the allocations of a render of a
// template not cached.
func (s *scanner) plainBytes() ([]byte, bool) {
	s.ws()
	if s.b[s.i] != '"' {
		return nil, false
	}
	end := bytes.IndexByte(s.b[s.i+1:], '"')
	body := s.b[s.i+1 : s.i+1+end]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return nil, false
	}
	s.i += end + 2
	return body, true
}

// entryID reads one entries element, which must be an object, and returns
// its "entry_id" (nil when absent), in s.b.
func (s *scanner) entryID() ([]byte, bool) {
	if !s.open('{') {
		return nil, false
	}
	var id []byte
	seen := false
	for more := s.first('}'); more; more = s.next('}') {
		key, ok := s.plainBytes()
		if !ok || !s.colon() {
			return nil, false
		}
		switch {
		case string(key) == "entry_id":
			if seen {
				return nil, false
			}
			seen = true
			if id, ok = s.plainBytes(); !ok {
				return nil, false
			}
		case !isASCII(key) || bytes.EqualFold(key, []byte("entry_id")):
			// encoding/json matches struct fields case-insensitively.
			return nil, false
		default:
			s.skip()
		}
	}
	return id, true
}

// skip passes over one value.
func (s *scanner) skip() {
	s.ws()
	depth := 0
	for s.i < len(s.b) {
		switch c := s.b[s.i]; c {
		case '"':
			s.i++
			for s.b[s.i] != '"' {
				if s.b[s.i] == '\\' {
					s.i++
				}
				s.i++
			}
			s.i++
		case '{', '[':
			depth++
			s.i++
		case '}', ']':
			if depth == 0 {
				return
			}
			depth--
			s.i++
		case ',':
			if depth == 0 {
				return
			}
			s.i++
		default:
			s.i++
		}
		if depth == 0 && s.i > 0 {
			switch s.b[s.i-1] {
			case '"', '}', ']':
				return
			}
		}
	}
}

// isASCII reports whether s holds only ASCII bytes.
func isASCII[T ~string | ~[]byte](s T) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
