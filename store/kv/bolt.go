package kv

import (
	"errors"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// BoltTx wraps a bbolt transaction.
func BoltTx(tx *bolt.Tx) Tx { return boltTx{tx: tx} }

// BoltTxTracking wraps a bbolt write transaction and sets *wrote when
// anything may have changed, so an unchanged one is rolled back instead of
// committed (a commit syncs twice even when no page changed).
func BoltTxTracking(tx *bolt.Tx, wrote *bool) Tx { return boltTx{tx: tx, wrote: wrote} }

// UnwrapBolt returns the bbolt transaction behind tx, if any; writes through
// it count as written.
func UnwrapBolt(tx Tx) (*bolt.Tx, bool) {
	b, ok := tx.(boltTx)
	if ok && b.tx.Writable() {
		b.mark()
	}
	return b.tx, ok
}

type boltTx struct {
	tx    *bolt.Tx
	wrote *bool // nil: not tracked
}

func (t boltTx) mark() {
	if t.wrote != nil {
		*t.wrote = true
	}
}

func (t boltTx) bucket(b *bolt.Bucket) Bucket {
	if b == nil {
		return nil // a nil interface, not a typed nil
	}
	return boltBkt{b: b, wrote: t.wrote}
}

func boltErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bolterr.ErrBucketNotFound):
		return ErrBucketNotFound
	case errors.Is(err, bolterr.ErrBucketExists):
		return ErrBucketExists
	case errors.Is(err, bolterr.ErrIncompatibleValue):
		return ErrIncompatible
	case errors.Is(err, bolterr.ErrTxNotWritable):
		return ErrTxNotWritable
	case errors.Is(err, bolterr.ErrKeyRequired), errors.Is(err, bolterr.ErrBucketNameRequired):
		return ErrKeyRequired
	}
	return err
}

func (t boltTx) Bucket(name []byte) Bucket { return t.bucket(t.tx.Bucket(name)) }
func (t boltTx) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	if t.tx.Bucket(name) == nil {
		t.mark()
	}
	b, err := t.tx.CreateBucketIfNotExists(name)
	return t.bucket(b), boltErr(err)
}
func (t boltTx) CreateBucket(name []byte) (Bucket, error) {
	t.mark()
	b, err := t.tx.CreateBucket(name)
	return t.bucket(b), boltErr(err)
}
func (t boltTx) DeleteBucket(name []byte) error {
	t.mark()
	return boltErr(t.tx.DeleteBucket(name))
}
func (t boltTx) ForEach(fn func(name []byte, b Bucket) error) error {
	return t.tx.ForEach(func(name []byte, b *bolt.Bucket) error { return fn(name, t.bucket(b)) })
}
func (t boltTx) Writable() bool { return t.tx.Writable() }

type boltBkt struct {
	b     *bolt.Bucket
	wrote *bool
}

func (b boltBkt) tx() boltTx { return boltTx{tx: b.b.Tx(), wrote: b.wrote} }

func (b boltBkt) Get(key []byte) []byte { return b.b.Get(key) }
func (b boltBkt) Put(key, value []byte) error {
	b.tx().mark()
	return boltErr(b.b.Put(key, value))
}
func (b boltBkt) Delete(key []byte) error {
	b.tx().mark()
	return boltErr(b.b.Delete(key))
}
func (b boltBkt) Bucket(name []byte) Bucket { return b.tx().bucket(b.b.Bucket(name)) }
func (b boltBkt) DeleteBucket(name []byte) error {
	b.tx().mark()
	return boltErr(b.b.DeleteBucket(name))
}
func (b boltBkt) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	if b.b.Bucket(name) == nil {
		b.tx().mark()
	}
	nb, err := b.b.CreateBucketIfNotExists(name)
	return b.tx().bucket(nb), boltErr(err)
}
func (b boltBkt) CreateBucket(name []byte) (Bucket, error) {
	b.tx().mark()
	nb, err := b.b.CreateBucket(name)
	return b.tx().bucket(nb), boltErr(err)
}
func (b boltBkt) Cursor() Cursor                           { return b.b.Cursor() }
func (b boltBkt) ForEach(fn func(k, v []byte) error) error { return b.b.ForEach(fn) }
func (b boltBkt) ForEachBucket(fn func(name []byte) error) error {
	return b.b.ForEachBucket(fn)
}
func (b boltBkt) Tx() Tx                   { return b.tx() }
func (b boltBkt) SetFillPercent(f float64) { b.b.FillPercent = f }
