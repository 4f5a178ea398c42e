package kv

import (
	"errors"

	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// BoltTx wraps a bbolt transaction.
func BoltTx(tx *bolt.Tx) Tx { return boltTx{tx} }

// UnwrapBolt returns the bbolt transaction behind tx, if it is one (the
// backup copies the file with it).
func UnwrapBolt(tx Tx) (*bolt.Tx, bool) {
	b, ok := tx.(boltTx)
	return b.tx, ok
}

type boltTx struct{ tx *bolt.Tx }

func boltBucket(b *bolt.Bucket) Bucket {
	if b == nil {
		return nil // a nil interface, not a typed nil
	}
	return boltBkt{b}
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

func (t boltTx) Bucket(name []byte) Bucket { return boltBucket(t.tx.Bucket(name)) }
func (t boltTx) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	b, err := t.tx.CreateBucketIfNotExists(name)
	return boltBucket(b), boltErr(err)
}
func (t boltTx) CreateBucket(name []byte) (Bucket, error) {
	b, err := t.tx.CreateBucket(name)
	return boltBucket(b), boltErr(err)
}
func (t boltTx) DeleteBucket(name []byte) error { return boltErr(t.tx.DeleteBucket(name)) }
func (t boltTx) ForEach(fn func(name []byte, b Bucket) error) error {
	return t.tx.ForEach(func(name []byte, b *bolt.Bucket) error { return fn(name, boltBucket(b)) })
}
func (t boltTx) Writable() bool { return t.tx.Writable() }

type boltBkt struct{ b *bolt.Bucket }

func (b boltBkt) Get(key []byte) []byte          { return b.b.Get(key) }
func (b boltBkt) Put(key, value []byte) error    { return boltErr(b.b.Put(key, value)) }
func (b boltBkt) Delete(key []byte) error        { return boltErr(b.b.Delete(key)) }
func (b boltBkt) Bucket(name []byte) Bucket      { return boltBucket(b.b.Bucket(name)) }
func (b boltBkt) DeleteBucket(name []byte) error { return boltErr(b.b.DeleteBucket(name)) }
func (b boltBkt) CreateBucketIfNotExists(name []byte) (Bucket, error) {
	nb, err := b.b.CreateBucketIfNotExists(name)
	return boltBucket(nb), boltErr(err)
}
func (b boltBkt) CreateBucket(name []byte) (Bucket, error) {
	nb, err := b.b.CreateBucket(name)
	return boltBucket(nb), boltErr(err)
}
func (b boltBkt) Cursor() Cursor                           { return b.b.Cursor() }
func (b boltBkt) ForEach(fn func(k, v []byte) error) error { return b.b.ForEach(fn) }
func (b boltBkt) ForEachBucket(fn func(name []byte) error) error {
	return b.b.ForEachBucket(fn)
}
func (b boltBkt) Tx() Tx                   { return boltTx{b.b.Tx()} }
func (b boltBkt) SetFillPercent(f float64) { b.b.FillPercent = f }
