package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// SeedRecord remembers one built-in bundle written by the seeder.
type SeedRecord struct {
	ContentHash string `json:"content_hash"`
	SeededAt    string `json:"seeded_at"`
}

// SeedReport says what SeedBuiltins did.
type SeedReport struct {
	Manifest string `json:"manifest"`
	// Unchanged is true when the built-in set was already seeded.
	Unchanged bool `json:"unchanged"`
	// Seeded and Updated list id@version written; Kept lists built-ins
	// left alone because the user edited or deleted them.
	Seeded  []string `json:"seeded,omitempty"`
	Updated []string `json:"updated,omitempty"`
	Kept    []string `json:"kept,omitempty"`
}

// ManifestHash identifies a built-in set by its ids, versions and hashes.
func ManifestHash(bundles []*Bundle) (string, error) {
	var lines []string
	for _, b := range bundles {
		h, err := b.ContentHash()
		if err != nil {
			return "", err
		}
		lines = append(lines, b.CookbookID+"@"+b.Version+" "+h)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:]), nil
}

// SeedBuiltins installs the built-in bundles at first start and on upgrade.
// It never overwrites a user's edit or restores a deleted bundle: a seeded
// version is replaced only while its content is still what was seeded.
func (s *Service) SeedBuiltins(ctx context.Context, bundles []*Bundle) (*SeedReport, error) {
	type prepared struct {
		b         *Bundle
		canonical []byte
		hash      string
	}
	var ps []prepared
	for _, b := range bundles {
		canonical, hash, err := Prepare(b)
		if err != nil {
			return nil, fmt.Errorf("built-in cookbook %s@%s: %w", b.CookbookID, b.Version, err)
		}
		ps = append(ps, prepared{b, canonical, hash})
	}
	manifest, err := ManifestHash(bundles)
	if err != nil {
		return nil, err
	}
	rep := &SeedReport{Manifest: manifest}
	var current []byte
	if err := s.db.View(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		current = append(current, root.Get(keyBuiltinManifest)...)
		return nil
	}); err != nil {
		return nil, err
	}
	if string(current) == manifest {
		rep.Unchanged = true
		return rep, nil
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	err = s.write(ctx, func(w *writeTx) error {
		*rep = SeedReport{Manifest: manifest}
		for _, p := range ps {
			ref := p.b.CookbookID + "@" + p.b.Version
			key := seedKey(p.b.CookbookID, p.b.Version)
			stored, err := w.stored(p.b.CookbookID, p.b.Version)
			if err != nil {
				return err
			}
			var rec SeedRecord
			hasRec := false
			if raw := w.root.Get(key); raw != nil {
				hasRec = json.Unmarshal(raw, &rec) == nil
			}
			record := func() error {
				raw, _ := json.Marshal(SeedRecord{ContentHash: p.hash, SeededAt: now})
				return w.root.Put(key, raw)
			}
			switch {
			case !hasRec && stored == nil:
				if err := w.put(p.b, p.canonical, p.hash); err != nil {
					return err
				}
				rep.Seeded = append(rep.Seeded, ref)
				if err := record(); err != nil {
					return err
				}
			case !hasRec:
				// The user already has this id@version: theirs wins. The
				// record makes it count as user content from now on.
				rep.Kept = append(rep.Kept, ref)
				if err := record(); err != nil {
					return err
				}
			case stored == nil:
				rep.Kept = append(rep.Kept, ref) // deleted by the user
			case HashBytes(stored) != rec.ContentHash:
				rep.Kept = append(rep.Kept, ref) // edited by the user
			case rec.ContentHash != p.hash:
				if err := w.put(p.b, p.canonical, p.hash); err != nil {
					return err
				}
				rep.Updated = append(rep.Updated, ref)
				if err := record(); err != nil {
					return err
				}
			}
		}
		return w.root.Put(keyBuiltinManifest, []byte(manifest))
	})
	if err != nil {
		return nil, wrapStoreErr("seed built-in cookbooks", err)
	}
	return rep, nil
}

// SeedBuiltinsFrom is SeedBuiltins that loads the set only when source
// differs from the last completed seeding's; source must change with
// anything that changes the set (an empty source always loads).
func (s *Service) SeedBuiltinsFrom(ctx context.Context, source string, load func() ([]*Bundle, error)) (*SeedReport, error) {
	var seededFrom, manifest string
	if err := s.db.View(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		seededFrom, manifest = string(root.Get(keyBuiltinSource)), string(root.Get(keyBuiltinManifest))
		return nil
	}); err != nil {
		return nil, wrapStoreErr("read the built-in seed", err)
	}
	if source != "" && seededFrom == source && manifest != "" {
		return &SeedReport{Manifest: manifest, Unchanged: true}, nil
	}
	bundles, err := load()
	if err != nil {
		return nil, err
	}
	rep, err := s.SeedBuiltins(ctx, bundles)
	if err != nil || source == "" {
		return rep, err
	}
	// Recorded after the seeding committed: a crash in between only makes
	// the next start load the set again.
	if err := s.db.Update(func(tx store.Tx) error {
		root, err := catalogBucket(tx)
		if err != nil {
			return err
		}
		return root.Put(keyBuiltinSource, []byte(source))
	}); err != nil {
		return nil, wrapStoreErr("record the built-in seed", err)
	}
	return rep, nil
}
