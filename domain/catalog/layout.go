package catalog

import (
	"bytes"
	"errors"
	"strings"

	"github.com/accordsai/accords-mcp/store"
)

// Layout: one flat keyspace in the "catalog" bucket (prefixed keys keep a
// write transaction to a few dirty pages).
//
//	rev                      uint64: catalog revision, bumped by every write tx
//	builtin_manifest         content hash of the built-in set last seeded
//	builtin_source           what that set was seeded from (SeedBuiltinsFrom)
//	stored_form              "zstd" once plain bundles of older files are packed
//	b/<id>\x00<version>      canonical bundle JSON, or it as a zstd frame (storedform.go)
//	i/<id>\x00<version>      Item JSON (list rows, no bundle decode needed)
//	l/<rev>                  JSON list of cookbook ids touched at that revision
//	s/<id>\x00<version>      SeedRecord JSON of built-in bundles
//
// Ids cannot contain NUL, so "<id>\x00" is an exact per-cookbook prefix.
var (
	keyRev             = []byte("rev")
	keyBuiltinManifest = []byte("builtin_manifest")
	keyBuiltinSource   = []byte("builtin_source")
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
func versionsOf(root store.Bucket, id string, fn func(version string, raw []byte) error) error {
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
func latestVersion(root store.Bucket, id string) string { return latestUnder(root, pfxBundle, id) }

// latestListed is latestVersion read from the list rows, which are written
// with the bundles in the same transactions.
func latestListed(root store.Bucket, id string) string { return latestUnder(root, pfxItem, id) }

func latestUnder(root store.Bucket, pfx, id string) string {
	prefix := []byte(pfx + id + "\x00")
	best := ""
	c := root.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if v := string(k[len(prefix):]); best == "" || CompareVersions(v, best) > 0 {
			best = v
		}
	}
	return best
}

func catalogBucket(tx store.Tx) (store.Bucket, error) {
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
