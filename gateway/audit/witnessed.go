package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/proof"
)

// Witnessing (C2SP tlog-witness): a witness cosigns a checkpoint once it
// has checked that it extends the last one it saw, so the holder of the
// key cannot show two histories to parties that rely on the same
// witnesses. Cosignatures are signature lines added to the stored
// checkpoint note: everything that hands checkpoints out (prove, export,
// checkpoint) carries them, and a verifier that knows only the log key
// still opens the note (unknown signers are skipped).

// bucketWitnesses holds, per witness, what it last cosigned and the
// outcome of the last submission: doctor reads it from another process.
var bucketWitnesses = []byte("witnesses")

// WitnessState is the last known state of one witness.
type WitnessState struct {
	Name string `json:"name"` // the witness key's name
	URL  string `json:"url"`
	// Cosigned is the largest checkpoint size the witness cosigned.
	Cosigned uint64 `json:"cosigned"`
	// Submitted is the size of the last checkpoint offered to it.
	Submitted uint64    `json:"submitted"`
	At        time.Time `json:"at"`
	Error     string    `json:"error,omitempty"`
}

// ConsistencyProof is the RFC 6962 consistency proof from the tree of size
// old to the tree of size size (empty when old is 0 or equals size).
func ConsistencyProof(db *store.DB, old, size uint64) ([][]byte, error) {
	if old == 0 || old == size {
		return nil, nil
	}
	if old > size {
		return nil, fmt.Errorf("consistency proof from %d to the smaller %d", old, size)
	}
	var out [][]byte
	err := db.View(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		nodes, err := proof.Consistency(old, size)
		if err != nil {
			return err
		}
		read := bucketNodes(b.tree)
		hashes := make([][]byte, len(nodes.IDs))
		for i, id := range nodes.IDs {
			if hashes[i], err = read(id); err != nil {
				return err
			}
		}
		out, err = nodes.Rehash(hashes, hasher.HashChildren)
		return err
	})
	return out, err
}

// AddCosignatures appends signature lines to the stored checkpoint of
// cp.Size when it is still the same checkpoint (the writer keeps only
// some); lines already present are not repeated. It reports whether the
// checkpoint was still stored.
func AddCosignatures(db *store.DB, cp Checkpoint, sigLines []byte) (bool, error) {
	text, _, ok := bytes.Cut(cp.Note, []byte("\n\n"))
	if !ok {
		return false, errors.New("not a signed note")
	}
	kept := false
	err := db.Update(func(tx store.Tx) error {
		b, err := auditBuckets(tx)
		if err != nil {
			return err
		}
		stored := b.checkpoints.Get(store.U64(cp.Size))
		st, _, ok := bytes.Cut(stored, []byte("\n\n"))
		if stored == nil || !ok || !bytes.Equal(st, text) {
			return nil
		}
		kept = true
		merged := append([]byte(nil), stored...)
		for line := range bytes.Lines(sigLines) {
			if !bytes.HasPrefix(line, []byte("— ")) || bytes.Contains(merged, line) {
				continue
			}
			if !bytes.HasSuffix(line, []byte("\n")) {
				line = append(line, '\n')
			}
			merged = append(merged, line...)
		}
		if bytes.Equal(merged, stored) {
			return nil
		}
		return b.checkpoints.Put(store.U64(cp.Size), merged)
	})
	return kept, err
}

// SaveWitnessState records st under its URL.
func SaveWitnessState(db *store.DB, st WitnessState) error {
	return db.Update(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketAudit)
		if root == nil {
			return errors.New("audit bucket missing (database not migrated)")
		}
		wb, err := root.CreateBucketIfNotExists(bucketWitnesses)
		if err != nil {
			return err
		}
		return store.PutJSON(wb, []byte(st.URL), st)
	})
}

// WitnessStates returns the recorded witness states, by URL.
func WitnessStates(db *store.DB) ([]WitnessState, error) {
	var out []WitnessState
	err := db.View(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketAudit)
		if root == nil {
			return nil
		}
		wb := root.Bucket(bucketWitnesses)
		if wb == nil {
			return nil
		}
		return wb.ForEach(func(_, v []byte) error {
			var st WitnessState
			if err := json.Unmarshal(v, &st); err != nil {
				return err
			}
			out = append(out, st)
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].URL < out[j].URL })
	return out, err
}

// CheckpointSize reads the tree size of a checkpoint note without
// verifying it.
func CheckpointSize(note []byte) (uint64, error) {
	cp, err := OpenCheckpoint(note, "", nil)
	return cp.Size, err
}
