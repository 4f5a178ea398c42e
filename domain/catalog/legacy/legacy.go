// Package legacy imports a predecessor catalog folder (sources.json,
// index.json, cookbooks/<id>/<version>.json) through the catalog and
// remote-source services; it only reads the folder.
package legacy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/platform/ident"
)

// EnvDir is the predecessor's variable naming its catalog folder.
const EnvDir = "ACCORDS_MCP_CATALOG_DIR"

// DefaultDir resolves the folder as the predecessor did: env, then
// os.UserConfigDir()/accords-mcp/catalog.
func DefaultDir(getenv func(string) string) (string, error) {
	if d := strings.TrimSpace(getenv(EnvDir)); d != "" {
		return d, nil
	}
	cfg, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no %s and no user config dir: %w", EnvDir, err)
	}
	return filepath.Join(cfg, "accords-mcp", "catalog"), nil
}

// Looks reports whether dir looks like a predecessor catalog folder.
func Looks(dir string) bool {
	for _, n := range []string{"cookbooks", "sources.json", "index.json"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			return true
		}
	}
	return false
}

// idPattern is D6's identifier rule; the predecessor accepted far more
// (spaces, leading dots, "."), which this server refuses.
var idPattern = ident.ID

// maxBundleBytes bounds one bundle file read (the remote bundle cap).
const maxBundleBytes = 4 << 20

// Bundle is one cookbooks/<id>/<version>.json file.
type Bundle struct {
	Path       string
	CookbookID string
	Version    string
	Raw        json.RawMessage
	// Refused is why the file cannot be imported ("" when it can).
	Refused string
}

// Source is one entry of sources.json.
type Source struct {
	SourceID string
	Raw      json.RawMessage
	Refused  string
}

// Folder is what Scan found.
type Folder struct {
	Dir     string
	Bundles []Bundle
	Sources []Source
}

// Scan reads dir; unreadable or invalid files become refused items, and
// only a missing or unreadable folder is an error.
func Scan(dir string) (Folder, error) {
	f := Folder{Dir: dir}
	fi, err := os.Stat(dir)
	if err != nil {
		return f, fmt.Errorf("legacy catalog folder: %w", err)
	}
	if !fi.IsDir() {
		return f, fmt.Errorf("legacy catalog folder %s is not a directory", dir)
	}
	if err := scanSources(dir, &f); err != nil {
		return f, err
	}
	root := filepath.Join(dir, "cookbooks")
	ids, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read %s: %w", root, err)
	}
	for _, idEnt := range ids {
		if !idEnt.IsDir() {
			continue // the predecessor ignored files directly under cookbooks/
		}
		id := idEnt.Name()
		files, err := os.ReadDir(filepath.Join(root, id))
		if err != nil {
			f.Bundles = append(f.Bundles, Bundle{Path: filepath.Join(root, id), CookbookID: id, Refused: "cannot read folder: " + err.Error()})
			continue
		}
		for _, fe := range files {
			if !fe.Type().IsRegular() || !strings.HasSuffix(fe.Name(), ".json") {
				continue
			}
			f.Bundles = append(f.Bundles, readBundle(filepath.Join(root, id, fe.Name()), id, strings.TrimSuffix(fe.Name(), ".json")))
		}
	}
	sort.Slice(f.Bundles, func(i, j int) bool { return f.Bundles[i].Path < f.Bundles[j].Path })
	return f, nil
}

func readBundle(path, id, version string) Bundle {
	b := Bundle{Path: path, CookbookID: id, Version: version}
	if !idPattern.Valid(id) {
		b.Refused = fmt.Sprintf("unsafe cookbook id %q: ids must match %s", id, idPattern)
		return b
	}
	if !idPattern.Valid(version) {
		b.Refused = fmt.Sprintf("unsafe version %q: versions must match %s", version, idPattern)
		return b
	}
	raw, err := readCapped(path, maxBundleBytes)
	if err != nil {
		b.Refused = err.Error()
		return b
	}
	var head struct {
		CookbookID *string `json:"cookbook_id"`
		Version    *string `json:"version"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		b.Refused = "not valid JSON: " + err.Error()
		return b
	}
	// The predecessor took the id and version from the path; a bundle that
	// says otherwise was edited by hand and is refused rather than guessed.
	if head.CookbookID == nil || strings.TrimSpace(*head.CookbookID) != id {
		b.Refused = fmt.Sprintf("bundle cookbook_id %s does not match its folder %q", quoted(head.CookbookID), id)
		return b
	}
	if head.Version == nil || strings.TrimSpace(*head.Version) != version {
		b.Refused = fmt.Sprintf("bundle version %s does not match its file name %q", quoted(head.Version), version)
		return b
	}
	b.Raw = raw
	return b
}

func quoted(p *string) string {
	if p == nil {
		return "(missing)"
	}
	return fmt.Sprintf("%q", *p)
}

func readCapped(path string, max int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("file is %d bytes, over the %d-byte bundle limit", fi.Size(), max)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(fh); err != nil {
		return nil, fmt.Errorf("cannot read: %w", err)
	}
	return buf.Bytes(), nil
}

func scanSources(dir string, f *Folder) error {
	path := filepath.Join(dir, "sources.json")
	raw, err := readCapped(path, maxBundleBytes)
	if err != nil {
		if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
		f.Sources = append(f.Sources, Source{SourceID: "(sources.json)", Refused: err.Error()})
		return nil
	}
	var doc struct {
		Sources []json.RawMessage `json:"sources"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		f.Sources = append(f.Sources, Source{SourceID: "(sources.json)", Refused: "not valid JSON: " + err.Error()})
		return nil
	}
	for i, s := range doc.Sources {
		var head struct {
			SourceID string `json:"source_id"`
		}
		src := Source{Raw: s}
		if err := json.Unmarshal(s, &head); err != nil {
			src.SourceID = fmt.Sprintf("(sources[%d])", i)
			src.Refused = "not a JSON object: " + err.Error()
		} else if src.SourceID = strings.TrimSpace(head.SourceID); src.SourceID == "" {
			src.SourceID = fmt.Sprintf("(sources[%d])", i)
			src.Refused = "source.source_id is required"
		}
		f.Sources = append(f.Sources, src)
	}
	return nil
}

// Conflict policies of the import; its default skips what already exists.
const (
	PolicySkip      = "SKIP_IF_EXISTS"
	PolicyOverwrite = "OVERWRITE"
	PolicyFail      = "FAIL"
)

// NormalizePolicy accepts the three policies in any case; anything else is
// an error (D2: a misspelt policy is never a silent default).
func NormalizePolicy(p string) (string, error) {
	switch n := strings.ToUpper(strings.TrimSpace(p)); n {
	case "":
		return PolicySkip, nil
	case PolicySkip, PolicyOverwrite, PolicyFail:
		return n, nil
	}
	return "", fmt.Errorf("conflict policy %q is not one of SKIP_IF_EXISTS, OVERWRITE, FAIL", p)
}

// Outcome of one import.
type Outcome int

// Outcomes.
const (
	Imported Outcome = iota
	Skipped
	Refused
)

func (o Outcome) String() string {
	return [...]string{"imported", "skipped", "refused"}[o]
}

// Importer writes one item: Imported when created or changed, Skipped with
// a reason when left as it is, or an error (the item is refused).
type Importer interface {
	ImportBundle(ctx context.Context, raw json.RawMessage, policy string) (Outcome, string, error)
	ImportSource(ctx context.Context, raw json.RawMessage, policy string) (Outcome, string, error)
}

// Item is one line of the report.
type Item struct {
	Kind    string `json:"kind"` // "bundle" or "source"
	ID      string `json:"id"`
	Version string `json:"version,omitempty"`
	Path    string `json:"path,omitempty"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// Report is the result of Import.
type Report struct {
	Dir      string `json:"dir"`
	Policy   string `json:"conflict_policy"`
	DryRun   bool   `json:"dry_run"`
	Items    []Item `json:"items"`
	Imported int    `json:"imported"`
	Skipped  int    `json:"skipped"`
	Refused  int    `json:"refused"`
}

func (r *Report) add(it Item) {
	switch it.Outcome {
	case Imported.String():
		r.Imported++
	case Skipped.String():
		r.Skipped++
	default:
		r.Refused++
	}
	r.Items = append(r.Items, it)
}

// Import imports the sources, then every bundle. With imp nil it is a dry
// run: items are reported as "imported" with reason "dry run".
func Import(ctx context.Context, f Folder, imp Importer, policy string) (Report, error) {
	policy, err := NormalizePolicy(policy)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Dir: f.Dir, Policy: policy, DryRun: imp == nil, Items: []Item{}}
	for _, s := range f.Sources {
		it := Item{Kind: "source", ID: s.SourceID}
		it.Outcome, it.Reason = run(ctx, s.Refused, imp, func() (Outcome, string, error) { return imp.ImportSource(ctx, s.Raw, policy) })
		rep.add(it)
	}
	for _, b := range f.Bundles {
		it := Item{Kind: "bundle", ID: b.CookbookID, Version: b.Version, Path: b.Path}
		it.Outcome, it.Reason = run(ctx, b.Refused, imp, func() (Outcome, string, error) { return imp.ImportBundle(ctx, b.Raw, policy) })
		rep.add(it)
	}
	return rep, ctx.Err()
}

func run(ctx context.Context, refused string, imp Importer, do func() (Outcome, string, error)) (string, string) {
	if refused != "" {
		return Refused.String(), refused
	}
	if err := ctx.Err(); err != nil {
		return Refused.String(), "interrupted: " + err.Error()
	}
	if imp == nil {
		return Imported.String(), "dry run"
	}
	o, why, err := do()
	if err != nil {
		return Refused.String(), err.Error()
	}
	return o.String(), why
}
