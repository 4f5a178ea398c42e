package audit

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// The Merkle tree over receipts follows RFC 6962: leaf i is receipt seq
// i+1, its leaf hash SHA-256(0x00 || stored receipt bytes). Only perfect
// subtrees are stored, each at the position it is completed, so the tree
// bucket is written strictly in key order.

var hasher = rfc6962.DefaultHasher

var factory = &compact.RangeFactory{Hash: hasher.HashChildren}

// LeafHash is the RFC 6962 leaf hash of stored receipt bytes.
func LeafHash(raw []byte) []byte { return hasher.HashLeaf(raw) }

// nodeKey is the storage position of perfect subtree id: the hashes
// completed by leaf m start at 2m - popcount(m) (the hashes of all earlier
// leaves), level 0 first.
func nodeKey(id compact.NodeID) uint64 {
	m := (id.Index+1)<<id.Level - 1
	return 2*m - uint64(bits.OnesCount64(m)) + uint64(id.Level)
}

// leafKey is where the hashes completed by leaf m begin.
func leafKey(m uint64) uint64 { return nodeKey(compact.NewNodeID(0, m)) }

// frontierIDs are the perfect subtrees covering leaves [0, size).
func frontierIDs(size uint64) []compact.NodeID { return compact.RangeNodes(0, size, nil) }

// loadRange rebuilds the compact range [0, size) from stored hashes.
func loadRange(tb store.Bucket, size uint64) (*compact.Range, error) {
	ids := frontierIDs(size)
	if p, ok := tb.(kv.Prefetcher); ok {
		keys := make([][]byte, len(ids))
		for i, id := range ids {
			keys[i] = store.U64(nodeKey(id))
		}
		p.Prefetch(keys) // one round trip on a remote store
	}
	read, hashes := bucketNodes(tb), make([][]byte, len(ids))
	for i, id := range ids {
		var err error
		if hashes[i], err = read(id); err != nil {
			return nil, err
		}
	}
	return factory.NewRange(0, size, hashes)
}

const hashSize = 32

func firstLeaf(id compact.NodeID) uint64 { b, _ := id.Coverage(); return b }
func lastLeaf(id compact.NodeID) uint64  { _, e := id.Coverage(); return e - 1 }

func cloneRange(r *compact.Range) *compact.Range {
	hs := make([][]byte, len(r.Hashes()))
	copy(hs, r.Hashes())
	c, _ := factory.NewRange(r.Begin(), r.End(), hs)
	return c
}

// rootOf is the tree hash of r (the empty-tree hash for size 0).
func rootOf(r *compact.Range) []byte {
	if r.End() == 0 {
		return hasher.EmptyRoot()
	}
	h, _ := r.GetRootHash(nil)
	return h
}

// placeholderLeaf stands for receipts pruned before signed audit existed
// (adoption of an older log): their hashes are unknown, so the tree starts
// from a frontier of identical placeholder leaves that nothing ever proves.
var placeholderLeaf = hasher.HashLeaf([]byte("accords-mcp: receipt pruned before signed audit"))

// placeholderRange is the compact range of size placeholder leaves.
func placeholderRange(size uint64) *compact.Range {
	perfect := [][]byte{placeholderLeaf}
	for l := 1; l < 64 && uint64(1)<<l <= size; l++ {
		perfect = append(perfect, hasher.HashChildren(perfect[l-1], perfect[l-1]))
	}
	var hashes [][]byte
	for l := 63; l >= 0; l-- {
		if size&(1<<l) != 0 {
			hashes = append(hashes, perfect[l])
		}
	}
	r, _ := factory.NewRange(0, size, hashes)
	return r
}

// storeNodes is a compact.VisitFn that stores each completed subtree;
// *err keeps the first failure.
func storeNodes(tb store.Bucket, err *error) compact.VisitFn {
	return func(id compact.NodeID, h []byte) {
		if *err == nil {
			*err = tb.Put(store.U64(nodeKey(id)), h)
		}
	}
}

// putRange stores the frontier of r (an adopted log's).
func putRange(tb store.Bucket, r *compact.Range) error {
	for i, id := range frontierIDs(r.End()) {
		if err := tb.Put(store.U64(nodeKey(id)), r.Hashes()[i]); err != nil {
			return err
		}
	}
	return nil
}

// nodeReader fetches stored perfect-subtree hashes.
type nodeReader func(id compact.NodeID) ([]byte, error)

func bucketNodes(tb store.Bucket) nodeReader {
	return func(id compact.NodeID) ([]byte, error) {
		h := tb.Get(store.U64(nodeKey(id)))
		if len(h) != hashSize {
			return nil, fmt.Errorf("tree hash of leaves %d..%d is not stored (pruned or missing)", firstLeaf(id)+1, lastLeaf(id)+1)
		}
		return append([]byte(nil), h...), nil
	}
}

// inclusionProof is the RFC 6962 audit path of leaf index in a tree of
// size.
func inclusionProof(read nodeReader, index, size uint64) ([][]byte, error) {
	nodes, err := proof.Inclusion(index, size)
	if err != nil {
		return nil, err
	}
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		h, err := read(id)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	return nodes.Rehash(hashes, hasher.HashChildren)
}

// VerifyInclusion checks that leafHash is leaf index of the tree of size
// with root.
func VerifyInclusion(index, size uint64, leafHash []byte, path [][]byte, root []byte) error {
	return proof.VerifyInclusion(hasher, index, size, leafHash, path, root)
}

// treeChecker compares the nodes a walk recomputes with the stored ones,
// reading the tree bucket in key order alongside.
type treeChecker struct {
	c       store.Cursor
	k, v    []byte
	problem string
	leaf    bool // the problem is a leaf (a receipt) rather than a subtree
}

func newTreeChecker(tb store.Bucket, fromLeaf uint64) *treeChecker {
	t := &treeChecker{c: tb.Cursor()}
	t.k, t.v = t.c.Seek(store.U64(leafKey(fromLeaf)))
	return t
}

// visit is the compact.VisitFn of the walk.
func (t *treeChecker) visit(id compact.NodeID, h []byte) {
	if t.problem != "" {
		return
	}
	want := nodeKey(id)
	if t.k == nil || binary.BigEndian.Uint64(t.k) > want {
		t.problem = fmt.Sprintf("the tree hash of receipts %d..%d is missing", firstLeaf(id)+1, lastLeaf(id)+1)
		return
	}
	if got := binary.BigEndian.Uint64(t.k); got < want {
		t.problem = fmt.Sprintf("the tree holds a hash at position %d that no receipt accounts for", got)
		return
	}
	if !bytes.Equal(t.v, h) && id.Level == 0 {
		t.leaf = true
		t.problem = fmt.Sprintf("receipt %d altered: its bytes no longer match the leaf hash stored in the tree", id.Index+1)
		return
	}
	if !bytes.Equal(t.v, h) {
		t.problem = fmt.Sprintf("the stored tree hash of receipts %d..%d does not match the receipts", firstLeaf(id)+1, lastLeaf(id)+1)
		return
	}
	t.k, t.v = t.c.Next()
}

// rest reports stored hashes beyond the last leaf walked.
func (t *treeChecker) rest() string {
	if t.problem == "" && t.k != nil {
		return fmt.Sprintf("the tree holds hashes beyond the last receipt (position %d)", binary.BigEndian.Uint64(t.k))
	}
	return t.problem
}
