// Package migrations holds the ordered schema migrations of the bbolt file.
// A migration is frozen once released: it names buckets by literal strings,
// never by constants that may later change.
package migrations

import (
	"fmt"

	"github.com/accordsai/accords-mcp/store/kv"
)

// Migration moves the schema from Version-1 to Version. Apply runs inside the
// same write transaction that records the new version, so a migration is
// applied whole or not at all.
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

// v2 adds the Merkle tree, checkpoints and base notes of the signed audit
// log inside "audit". Existing receipts are adopted (tree built, first
// checkpoint signed) by the audit log at its next start, which has the
// signing key; a migration has no key.
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

// v3 adds the tasks of the MCP Tasks extension: one record per task, keyed
// by the SHA-256 of its id, holding the owner, the approval it waits on and,
// once finished, the tool result.
func v3ApprovalTasks(tx kv.Tx) error {
	return createBuckets(tx, "tasks")
}

// v4 changes no bucket. From this version on, a stored bundle in "catalog"
// may be a zstd frame instead of JSON, which a binary of version 3 would
// read as damaged; recording the version makes such a binary refuse the
// file instead. The bundles already stored are packed by the catalog at its
// next start, in transactions small enough for etcd: one migration
// transaction cannot hold them all.
func v4PackedBundles(kv.Tx) error { return nil }
