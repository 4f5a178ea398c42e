package store

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
)

// CopyTx copies every bucket and key of src into dst.
func CopyTx(dst, src Tx) error {
	return src.ForEach(func(name []byte, b Bucket) error {
		d, err := dst.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		return copyBucket(d, b)
	})
}

func copyBucket(dst, src Bucket) error {
	c := src.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			sub := src.Bucket(k)
			if sub == nil {
				continue
			}
			d, err := dst.CreateBucketIfNotExists(k)
			if err != nil {
				return err
			}
			if err := copyBucket(d, sub); err != nil {
				return err
			}
			continue
		}
		if err := dst.Put(k, v); err != nil {
			return err
		}
	}
	return nil
}

// restoreChunk is how many keys one etcd transaction of LoadFrom writes
// (under etcd's 128 operations).
const restoreChunk = 96

// restoreChunkBytes bounds the bytes of one such transaction (etcd takes
// 1.5 MiB per request; a bundle is at most EtcdMaxBundleBytes).
const restoreChunkBytes = 256 << 10

// LoadFrom replaces this etcd store's contents with src (a checked, migrated
// backup): it deletes the buckets, writes keys in transactions of
// restoreChunk and the schema version last; an interrupted load is rerun.
// Replicas must be stopped meanwhile. skip leaves out keys; finish runs in
// the transaction writing the schema version.
func (db *DB) LoadFrom(src *DB, skip func(path [][]byte, k []byte) bool, finish func(tx Tx) error) (int, error) {
	if db.etcd == nil {
		return 0, errors.New("store: LoadFrom loads an etcd store; a bbolt file is restored by replacing it")
	}
	if err := db.clearAll(); err != nil {
		return 0, fmt.Errorf("clear the etcd store: %w", err)
	}
	ld := &loader{db: db, skip: skip}
	err := src.View(func(tx Tx) error {
		return tx.ForEach(func(name []byte, b Bucket) error { return ld.walk([][]byte{slices.Clone(name)}, b) })
	})
	if err == nil {
		err = ld.flush()
	}
	if err == nil && ld.version != nil {
		err = db.Update(func(tx Tx) error {
			if finish != nil {
				if err := finish(tx); err != nil {
					return err
				}
			}
			m, err := tx.CreateBucketIfNotExists(BucketMeta)
			if err != nil {
				return err
			}
			return m.Put(KeySchemaVersion, ld.version)
		})
	}
	if err != nil {
		return ld.total, fmt.Errorf("load the etcd store (run the restore again: it starts over): %w", err)
	}
	return ld.total, nil
}

// clearAll deletes every top-level bucket.
func (db *DB) clearAll() error {
	return db.Update(func(tx Tx) error {
		var names [][]byte
		if err := tx.ForEach(func(name []byte, _ Bucket) error {
			names = append(names, slices.Clone(name))
			return nil
		}); err != nil {
			return err
		}
		for _, n := range names {
			if err := tx.DeleteBucket(n); err != nil {
				return err
			}
		}
		return nil
	})
}

// loader writes what a walk of the source finds in transactions of
// restoreChunk keys, keeping the schema version for last.
type loader struct {
	db      *DB
	skip    func(path [][]byte, k []byte) bool
	pending []loadEntry
	total   int
	bytes   int
	version []byte
}

// loadEntry is one key (or, with k nil, a bucket to create).
type loadEntry struct {
	path [][]byte
	k, v []byte
}

func (ld *loader) walk(path [][]byte, b Bucket) error {
	// An empty bucket is still created.
	ld.pending = append(ld.pending, loadEntry{path: path})
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v == nil {
			if sub := b.Bucket(k); sub != nil {
				if err := ld.walk(append(slices.Clone(path), slices.Clone(k)), sub); err != nil {
					return err
				}
			}
			continue
		}
		if len(path) == 1 && bytes.Equal(path[0], BucketMeta) && bytes.Equal(k, KeySchemaVersion) {
			ld.version = slices.Clone(v)
			continue
		}
		if ld.skip != nil && ld.skip(path, k) {
			continue
		}
		ld.pending = append(ld.pending, loadEntry{path: path, k: slices.Clone(k), v: slices.Clone(v)})
		ld.bytes += len(k) + len(v)
		if len(ld.pending) >= restoreChunk || ld.bytes >= restoreChunkBytes {
			if err := ld.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (ld *loader) flush() error {
	if len(ld.pending) == 0 {
		return nil
	}
	err := ld.db.Update(func(tx Tx) error {
		for _, e := range ld.pending {
			b, err := tx.CreateBucketIfNotExists(e.path[0])
			if err != nil {
				return err
			}
			for _, p := range e.path[1:] {
				if b, err = b.CreateBucketIfNotExists(p); err != nil {
					return err
				}
			}
			if e.k != nil {
				if err := b.Put(e.k, e.v); err != nil {
					return err
				}
			}
		}
		return nil
	})
	ld.total += len(ld.pending)
	ld.pending, ld.bytes = ld.pending[:0], 0
	return err
}
