package audit

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/accordsai/accords-mcp/store"
	tlogproof "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/compact"
	"golang.org/x/mod/sumdb/note"
)

// ExportFormat names the NDJSON export: a "log" line, then "base",
// "frontier", "checkpoint", "restore" lines, a "path" line (inclusion
// proof) per receipt kept under the tenant floor, then one "receipt" line
// per receipt with the stored bytes verbatim. VerifyExport checks it as
// Verify checks the database, recomputing the tree hashes.
const ExportFormat = "accords-mcp-audit-export/v1"

type exportLine struct {
	Type   string          `json:"type"`
	Format string          `json:"format,omitempty"`
	Origin string          `json:"origin,omitempty"`
	Head   *Head           `json:"head,omitempty"`
	Size   uint64          `json:"size,omitempty"`
	Note   string          `json:"note,omitempty"`
	Hashes []string        `json:"hashes,omitempty"`
	Raw    json.RawMessage `json:"receipt,omitempty"`
}

// Export writes the log as NDJSON to w and returns the receipt count.
func Export(db *store.DB, w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 64<<10)
	n := 0
	err := db.View(func(tx store.Tx) error {
		src, err := dbSource(tx)
		if err != nil {
			return err
		}
		if !src.hasInfo {
			return errors.New("the log has no signed history yet (start the server once): nothing verifiable to export")
		}
		enc := json.NewEncoder(bw)
		var werr error // the first write error; later writes are skipped
		put := func(l exportLine) {
			if werr == nil {
				werr = enc.Encode(l)
			}
		}
		put(exportLine{Type: "log", Format: ExportFormat, Origin: src.origin, Head: src.head})
		var start uint64 // the retention base: receipts up to it are kept ones
		for _, k := range src.bases {
			put(exportLine{Type: "base", Size: k.key, Note: string(k.raw)})
			if b, err := openBase(k.raw, nil); err == nil && b.Kind != BaseAcknowledged {
				start = b.Size
			}
			rng, err := src.frontier(k.key)
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			put(exportLine{Type: "frontier", Size: k.key, Hashes: b64(rng.Hashes())})
		}
		for _, k := range src.checkpoints {
			put(exportLine{Type: "checkpoint", Size: k.key, Note: string(k.raw)})
		}
		for _, k := range src.restores {
			put(exportLine{Type: "restore", Size: k.key, Note: string(k.raw)})
		}
		var perr error
		err = src.receipts(0, func(seq uint64, _ []byte) bool {
			if seq > start {
				return false
			}
			path, err := src.path(seq, start)
			if err != nil {
				perr = fmt.Errorf("export: %w", err)
				return false
			}
			put(exportLine{Type: "path", Size: seq, Hashes: b64(path)})
			return werr == nil
		})
		if err != nil || perr != nil {
			return cmp.Or(err, perr)
		}
		err = src.receipts(0, func(_ uint64, raw []byte) bool {
			// Stored bytes are compact JSON: written verbatim they stay the leaf bytes.
			if werr == nil {
				_, werr = fmt.Fprintf(bw, "%s%s}\n", receiptPrefix, raw)
			}
			n++
			return werr == nil
		})
		return cmp.Or(err, werr)
	})
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

const receiptPrefix = `{"type":"receipt","receipt":`

func b64(hs [][]byte) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = base64.StdEncoding.EncodeToString(h)
	}
	return out
}

// VerifyExport verifies an export with no database: chain, tree (recomputed),
// signatures and saved checkpoints. It streams, so memory stays constant.
func VerifyExport(r io.Reader, opts VerifyOptions) (Report, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	src := &source{hasInfo: true}
	frontiers := map[uint64]*compact.Range{0: factory.NewEmptyRange(0)}
	paths := map[uint64][][]byte{}
	lineNo := 0
	// next returns the next non-blank line, nil at the end.
	next := func() ([]byte, error) {
		for {
			line, err := br.ReadBytes('\n')
			if len(line) == 0 {
				if errors.Is(err, io.EOF) {
					return nil, nil
				}
				return nil, err
			}
			lineNo++
			if line = bytes.TrimRight(line, "\r\n"); len(bytes.TrimSpace(line)) > 0 {
				return line, nil
			}
		}
	}
	var first []byte
	for {
		line, err := next()
		if err != nil {
			return Report{}, err
		}
		if line == nil {
			break
		}
		var l exportLine
		if err := json.Unmarshal(line, &l); err != nil {
			return Report{}, fmt.Errorf("export line %d: %w", lineNo, err)
		}
		if lineNo == 1 && (l.Type != "log" || l.Format != ExportFormat) {
			return Report{}, fmt.Errorf("export line 1: not an %s file", ExportFormat)
		}
		if l.Type == "receipt" {
			first = line
			break
		}
		if err := readHeaderLine(l, src, frontiers, paths); err != nil {
			return Report{}, fmt.Errorf("export line %d: %w", lineNo, err)
		}
	}
	src.frontier = func(size uint64) (*compact.Range, error) {
		if r, ok := frontiers[size]; ok {
			return cloneRange(r), nil
		}
		return nil, fmt.Errorf("the export has no tree frontier at size %d", size)
	}
	src.path = func(seq, _ uint64) ([][]byte, error) {
		if p, ok := paths[seq]; ok {
			return p, nil
		}
		return nil, fmt.Errorf("the export has no inclusion proof for receipt %d", seq)
	}
	var streamErr error
	src.receipts = func(_ uint64, yield func(uint64, []byte) bool) error {
		for line := first; line != nil; {
			raw, seq, err := receiptOfLine(line)
			if err != nil {
				return fmt.Errorf("export line %d: %w", lineNo, err)
			}
			if !yield(seq, raw) {
				return nil
			}
			if line, streamErr = next(); streamErr != nil {
				return nil
			}
		}
		return nil
	}
	rep := verify(src, opts, 0)
	return rep, streamErr
}

// readHeaderLine takes one line before the receipts into src, frontiers
// and paths.
func readHeaderLine(l exportLine, src *source, frontiers map[uint64]*compact.Range, paths map[uint64][][]byte) error {
	hashes := func(what string) ([][]byte, error) {
		hs, err := unb64(l.Hashes)
		if err != nil {
			return nil, fmt.Errorf("bad %s hash", what)
		}
		return hs, nil
	}
	switch l.Type {
	case "log":
		src.origin, src.head = l.Origin, l.Head
	case "base":
		src.bases = append(src.bases, keyed{key: l.Size, raw: []byte(l.Note)})
	case "checkpoint":
		src.checkpoints = append(src.checkpoints, keyed{key: l.Size, raw: []byte(l.Note)})
	case "restore":
		src.restores = append(src.restores, keyed{key: l.Size, raw: []byte(l.Note)})
	case "path":
		hs, err := hashes("path")
		if err != nil {
			return err
		}
		paths[l.Size] = hs
	case "frontier":
		hs, err := hashes("frontier")
		if err != nil {
			return err
		}
		rng, err := factory.NewRange(0, l.Size, hs)
		if err != nil {
			return err
		}
		frontiers[l.Size] = rng
	default:
		return fmt.Errorf("unknown type %q", l.Type)
	}
	return nil
}

func unb64(hs []string) ([][]byte, error) {
	out := make([][]byte, len(hs))
	for i, h := range hs {
		var err error
		if out[i], err = base64.StdEncoding.DecodeString(h); err != nil || len(out[i]) != hashSize {
			return nil, fmt.Errorf("hash %d is not a base64 SHA-256", i)
		}
	}
	return out, nil
}

// receiptOfLine returns the receipt's bytes exactly as exported.
func receiptOfLine(line []byte) ([]byte, uint64, error) {
	if !bytes.HasPrefix(line, []byte(receiptPrefix)) || !bytes.HasSuffix(line, []byte("}")) {
		return nil, 0, errors.New("not a receipt line")
	}
	raw := line[len(receiptPrefix) : len(line)-1]
	var r struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, 0, err
	}
	return raw, r.Seq, nil
}

// Proof is a receipt with its inclusion proof in a signed checkpoint.
type Proof struct {
	Seq       uint64 `json:"seq"`
	LeafIndex uint64 `json:"leaf_index"`
	LeafHash  string `json:"leaf_hash"`
	// Receipt is the stored receipt, byte for byte (the leaf data), as a
	// JSON string so no reformatting can change it.
	Receipt  string `json:"receipt"`
	TreeSize uint64 `json:"tree_size"`
	Root     string `json:"root"`
	// Path is the RFC 6962 audit path, base64, leaf to root.
	Path       []string `json:"inclusion_proof"`
	Checkpoint string   `json:"checkpoint"`
	// TLogProof is the same proof in the C2SP tlog-proof format, the
	// receipt bytes as its extra data.
	TLogProof string `json:"tlog_proof"`
}

// ErrNotCovered means the receipt is newer than every checkpoint.
var ErrNotCovered = errors.New("receipt not yet covered by a signed checkpoint")

// ErrNoReceipt means the log holds no receipt with that sequence number.
var ErrNoReceipt = errors.New("no such receipt")

// Prove returns receipt seq with its inclusion proof in the newest
// checkpoint.
func Prove(db *store.DB, seq uint64) (Proof, error) {
	var p Proof
	err := inAudit(db.View, func(b buckets) error {
		k, cpRaw := b.checkpoints.Cursor().Last()
		if k == nil {
			return fmt.Errorf("%w: the log has no checkpoint", ErrNotCovered)
		}
		cp, err := OpenCheckpoint(cpRaw, "", nil)
		if err != nil {
			return err
		}
		raw := b.receipts.Get(store.U64(seq))
		switch {
		case seq == 0:
			return errors.New("receipt sequence numbers start at 1")
		case seq > cp.Size:
			return fmt.Errorf("%w: receipt %d is newer than the newest checkpoint (size %d); the next one is signed within the checkpoint interval or at shutdown", ErrNotCovered, seq, cp.Size)
		case raw == nil:
			return fmt.Errorf("%w: receipt %d is not in the log (pruned by retention, or never written)", ErrNoReceipt, seq)
		}
		path, err := inclusionProof(bucketNodes(b.tree), seq-1, cp.Size)
		if err != nil {
			return err
		}
		leaf := LeafHash(raw)
		p = Proof{Seq: seq, LeafIndex: seq - 1, LeafHash: hex.EncodeToString(leaf), Receipt: string(raw),
			TreeSize: cp.Size, Root: base64.StdEncoding.EncodeToString(cp.Root), Checkpoint: string(cpRaw)}
		p.Path = b64(path)
		tp := tlogproof.TLogProof{Index: seq - 1, Checkpoint: append([]byte(nil), cpRaw...), ExtraData: []byte(p.Receipt)}
		for _, h := range path {
			tp.Hashes = append(tp.Hashes, [hashSize]byte(h))
		}
		p.TLogProof = string(tp.Marshal())
		return nil
	})
	return p, err
}

// VerifyProof checks a proof offline: the checkpoint's signature under v,
// the receipt's leaf hash (and wantLeaf when given, e.g. from a tool
// result's _meta) and the audit path to the signed root.
func VerifyProof(p Proof, v note.Verifier, wantLeaf string) (Checkpoint, error) {
	cp, err := OpenCheckpoint([]byte(p.Checkpoint), "", v)
	if err != nil {
		return Checkpoint{}, err
	}
	leaf := LeafHash([]byte(p.Receipt))
	if hex.EncodeToString(leaf) != p.LeafHash || (wantLeaf != "" && wantLeaf != p.LeafHash) {
		return cp, errors.New("the receipt's leaf hash does not match the one named")
	}
	var r struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal([]byte(p.Receipt), &r); err != nil || r.Seq != p.LeafIndex+1 {
		return cp, errors.New("the receipt's seq does not match the proof's leaf index")
	}
	path, err := unb64(p.Path)
	if err != nil {
		return cp, fmt.Errorf("proof: %w", err)
	}
	if err := VerifyInclusion(p.LeafIndex, cp.Size, leaf, path, cp.Root); err != nil {
		return cp, fmt.Errorf("inclusion proof does not verify: %w", err)
	}
	return cp, nil
}

// NewestCheckpoint returns the newest stored checkpoint note.
func NewestCheckpoint(db *store.DB) ([]byte, error) {
	var out []byte
	err := inAudit(db.View, func(b buckets) error {
		if k, v := b.checkpoints.Cursor().Last(); k != nil {
			out = append([]byte(nil), v...)
		}
		return nil
	})
	if err == nil && out == nil {
		err = errors.New("the log has no checkpoint yet (the server signs one at its first receipt)")
	}
	return out, err
}
