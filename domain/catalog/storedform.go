package catalog

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/accordsai/accords-mcp/store"
)

// A stored bundle (b/ value) is its canonical JSON, or that JSON as one zstd
// frame when markedly smaller, which keeps the file and its backups small.
// Canonical JSON starts with '{', so the frame's magic number tells the
// forms apart. Item rows (i/) stay plain.

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

const (
	// packMinBytes: below this a frame saves too little to pay for itself.
	packMinBytes = 256
	// maxUnpackedBytes bounds a frame's expansion, so a damaged file cannot
	// make a read allocate without limit; larger bundles are stored plain.
	maxUnpackedBytes = 64 << 20
)

var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		// Errors only come from invalid options.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(2), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err)
		}
		return enc
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(maxUnpackedBytes))
		if err != nil {
			panic(err)
		}
		return dec
	})
)

// packed reports whether a stored value is a zstd frame.
func packed(stored []byte) bool { return bytes.HasPrefix(stored, zstdMagic) }

// pack returns the stored form of a bundle's canonical JSON.
func pack(canonical []byte) []byte {
	if len(canonical) < packMinBytes || len(canonical) > maxUnpackedBytes {
		return canonical
	}
	frame := zstdEncoder().EncodeAll(canonical, make([]byte, 0, len(canonical)/2))
	if len(frame) > len(canonical)-len(canonical)/8 {
		return canonical
	}
	return frame
}

// unpack returns the canonical JSON of a stored value: a plain value as is
// (valid only inside its transaction), a frame as a fresh slice.
func unpack(stored []byte) ([]byte, error) {
	if !packed(stored) {
		return stored, nil
	}
	canonical, err := zstdDecoder().DecodeAll(stored, nil)
	if err != nil {
		return nil, fmt.Errorf("stored bundle does not decompress: %w", err)
	}
	return canonical, nil
}

// keyPacked marks a catalog whose plain bundles from before packing have
// all been packed (those that shrink).
var keyPacked = []byte("stored_form")

const storedFormZstd = "zstd"

// packChunk overrides how many bundles one packing transaction rewrites
// (tests; 0: the store's write budget, or 1000 when it has none).
var packChunk int

// packStored runs packPlainBundles; a failure only costs space, so it is
// logged and retried at the next start.
func (s *Service) packStored(ctx context.Context) error {
	n, err := s.packPlainBundles(ctx)
	if n > 0 {
		s.logger.Info("packed stored bundles", "count", n)
	}
	if err != nil && ctx.Err() == nil {
		s.logger.Warn("packing stored bundles stopped; they stay readable, and the next start goes on", "packed", n, "error", err.Error())
		return nil
	}
	return err
}

// packPlainBundles packs plain bundles a chunk per transaction, then sets
// keyPacked; the revision does not move.
func (s *Service) packPlainBundles(ctx context.Context) (int, error) {
	done := false
	if err := s.db.View(func(tx store.Tx) error {
		if root := tx.Bucket(store.BucketCatalog); root != nil {
			done = string(root.Get(keyPacked)) == storedFormZstd
		}
		return nil
	}); err != nil || done {
		return 0, err
	}
	chunk := s.db.WriteBudget()
	if packChunk > 0 {
		chunk = packChunk
	} else if chunk <= 0 {
		chunk = 1000
	}
	total := 0
	from := []byte(pfxBundle)
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var next []byte
		n := 0
		err := s.db.Update(func(tx store.Tx) error {
			root, err := catalogBucket(tx)
			if err != nil {
				return err
			}
			next, n = nil, 0
			var todo [][2][]byte
			c := root.Cursor()
			for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, []byte(pfxBundle)); k, v = c.Next() {
				if len(todo) == chunk {
					next = append([]byte(nil), k...)
					break
				}
				if packed(v) {
					continue
				}
				if _, err := decodeBundle(v); err != nil {
					// A damaged plain value stays as it is.
					continue
				}
				if p := pack(v); len(p) < len(v) {
					todo = append(todo, [2][]byte{append([]byte(nil), k...), p})
				}
			}
			for _, kv := range todo {
				if err := root.Put(kv[0], kv[1]); err != nil {
					return err
				}
			}
			n = len(todo)
			if next == nil {
				return root.Put(keyPacked, []byte(storedFormZstd))
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("pack stored bundles: %w", err)
		}
		total += n
		if next == nil {
			return total, nil
		}
		from = next
	}
}
