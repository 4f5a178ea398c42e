// Package kv is the transactional key/value shape of every store backend:
// nested buckets, ordered keys, cursors, all-or-nothing transactions.
package kv

import "errors"

// Tx is one read or write transaction. Buckets and cursors obtained from
// it are valid only until the function given to View or Update returns.
type Tx interface {
	// Bucket returns the top-level bucket name, or nil when it is absent.
	Bucket(name []byte) Bucket
	CreateBucketIfNotExists(name []byte) (Bucket, error)
	CreateBucket(name []byte) (Bucket, error)
	DeleteBucket(name []byte) error
	// ForEach calls fn for each top-level bucket in name order.
	ForEach(fn func(name []byte, b Bucket) error) error
	Writable() bool
}

// Bucket is a sorted collection of keys and nested buckets.
type Bucket interface {
	// Get returns the value of key, or nil when it is absent or names a
	// nested bucket. The slice is valid only during the transaction.
	Get(key []byte) []byte
	Put(key, value []byte) error
	Delete(key []byte) error
	Bucket(name []byte) Bucket
	CreateBucketIfNotExists(name []byte) (Bucket, error)
	CreateBucket(name []byte) (Bucket, error)
	DeleteBucket(name []byte) error
	Cursor() Cursor
	// ForEach calls fn for each key in order; a nested bucket has a nil value.
	ForEach(fn func(k, v []byte) error) error
	// ForEachBucket calls fn for each nested bucket in name order.
	ForEachBucket(fn func(name []byte) error) error
	// Tx is the transaction the bucket belongs to.
	Tx() Tx
	// SetFillPercent hints that keys are appended in order (bbolt packs
	// its pages fuller); other backends ignore it.
	SetFillPercent(f float64)
}

// Cursor walks a bucket in key order. A nested bucket appears with a nil
// value. Each method returns a nil key past either end.
type Cursor interface {
	First() (key, value []byte)
	Last() (key, value []byte)
	Next() (key, value []byte)
	Prev() (key, value []byte)
	Seek(seek []byte) (key, value []byte)
}

// Expiring buckets can drop a key after a time to live (etcd leases);
// callers still store and check the expiry themselves.
type Expiring interface {
	PutTTL(key, value []byte, ttlSeconds int64) error
}

// Prefetcher is offered by buckets of a backend where each read is a
// round trip (etcd): the keys are read together before they are used.
type Prefetcher interface {
	Prefetch(keys [][]byte)
}

// Revisioned write transactions (etcd) let a writer rely on what a bucket
// held at its last commit instead of reading it again; the commit fails
// and reruns if the bucket changed since.
type Revisioned interface {
	// Unchanged makes the commit conditional on nothing directly in b having
	// been written or deleted after revision rev.
	Unchanged(b Bucket, rev int64)
	// OnCommit calls fn with the commit's revision once it has landed.
	OnCommit(fn func(rev int64))
}

// Errors every backend reports the same way.
var (
	ErrBucketNotFound = errors.New("bucket not found")
	ErrBucketExists   = errors.New("bucket already exists")
	ErrIncompatible   = errors.New("key names a bucket, or a bucket name names a key")
	ErrTxNotWritable  = errors.New("transaction not writable")
	ErrKeyRequired    = errors.New("key required")
)
