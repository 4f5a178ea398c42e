// Package builtin embeds the cookbooks that ship with accords-mcp, seeded at
// first start and on upgrade; a user's edits and deletions win.
package builtin

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"

	"github.com/accordsai/accords-mcp/domain/catalog"
)

//go:embed cookbooks/*.json
var files embed.FS

// Files lists the embedded bundle files (sorted) and returns their bytes.
func Files() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(files, "cookbooks", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".json" {
			return err
		}
		raw, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = raw
		return nil
	})
	return out, err
}

// Bundles decodes every built-in cookbook. Each file must be named after
// its cookbook id (<cookbook_id>.json), which a test enforces.
func Bundles() ([]*catalog.Bundle, error) {
	fm, err := Files()
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(fm))
	var out []*catalog.Bundle
	for _, n := range names {
		b, err := catalog.DecodeBundle(fm[n])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// Fingerprint is a hash of every embedded file's name and bytes.
func Fingerprint() (string, error) {
	fm, err := Files()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, n := range slices.Sorted(maps.Keys(fm)) {
		h.Write([]byte(n + "\x00" + strconv.Itoa(len(fm[n])) + "\x00"))
		h.Write(fm[n])
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
