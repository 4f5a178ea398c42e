// Package migrations holds the ordered schema migrations of the bbolt file.
// A migration is frozen once released: it names buckets by literal strings,
// never by constants that may later change.
package migrations

import (
	"fmt"

	"github.com/accordsai/accords-mcp/store/kv"
)

// Migration moves the schema from Version-1 to Version inside the write
// transaction that records the new version.
type Migration struct {
	Version int
	Name    string
	Apply   func(tx kv.Tx) error
}

// All returns the migrations in order. Versions are 1..n without gaps.
func All() []Migration {
	return []Migration{
		{Version: 1, Name: "initial buckets", Apply: v1InitialBuckets},
		{Version: 2, Name: "signed audit log buckets", Apply: v2SignedAudit},
		{Version: 3, Name: "approval tasks bucket", Apply: v3ApprovalTasks},
		{Version: 4, Name: "stored bundles may be zstd frames", Apply: v4PackedBundles},
	}
}

// Latest is the schema version this binary writes.
func Latest() int { return len(All()) }

func createBuckets(tx kv.Tx, names ...string) error {
	for _, n := range names {
		if _, err := tx.CreateBucketIfNotExists([]byte(n)); err != nil {
			return fmt.Errorf("create bucket %q: %w", n, err)
		}
	}
	return nil
}

// v1 lays out one top-level bucket per entity (etcd style).
func v1InitialBuckets(tx kv.Tx) error {
	return createBuckets(tx,
		"meta",        // schema version, revisions, chain heads
		"sessions",    // Vaultclaw session per scope (token sealed)
		"catalog",     // cookbook bundles, every version
		"sources",     // remote catalog sources and their cached indexes
		"policy_hash", // connector policy-hash cache with expiry
		"handles",     // pending-approval handles per scope
		"audit",       // audit receipts keyed by sequence
	)
}

// v2 adds the signed audit log's Merkle tree, checkpoints and base notes;
// the audit log adopts existing receipts at its next start (it has the key).
func v2SignedAudit(tx kv.Tx) error {
	a, err := tx.CreateBucketIfNotExists([]byte("audit"))
	if err != nil {
		return err
	}
	for _, n := range []string{"receipts", "tree", "checkpoints", "bases"} {
		if _, err := a.CreateBucketIfNotExists([]byte(n)); err != nil {
			return fmt.Errorf("create bucket audit/%s: %w", n, err)
		}
	}
	return nil
}

// v3 adds the MCP Tasks records, keyed by the SHA-256 of the task id.
func v3ApprovalTasks(tx kv.Tx) error {
	return createBuckets(tx, "tasks")
}

// v4 changes no bucket: stored bundles may now be zstd frames, which a
// version-3 binary would read as damaged, so it refuses the file. The
// catalog packs existing bundles at its next start.
func v4PackedBundles(kv.Tx) error { return nil }
