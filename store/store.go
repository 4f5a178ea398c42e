// Package store owns the durable state, in a bbolt file (default) or etcd
// (replicas sharing one state); domain packages run their transactions
// through DB, which offers both as the same kv.Tx.
package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/platform/privdir"
	"github.com/accordsai/accords-mcp/store/boltfile"
	"github.com/accordsai/accords-mcp/store/etcdkv"
	"github.com/accordsai/accords-mcp/store/kv"
	bolt "go.etcd.io/bbolt"
	bolterr "go.etcd.io/bbolt/errors"
)

// Top-level buckets.
var (
	BucketMeta       = []byte("meta")
	BucketSessions   = []byte("sessions")
	BucketCatalog    = []byte("catalog")
	BucketSources    = []byte("sources")
	BucketPolicyHash = []byte("policy_hash")
	BucketHandles    = []byte("handles")
	BucketAudit      = []byte("audit")
	BucketTasks      = []byte("tasks")
)

// Tx, Bucket and Cursor are the transaction shape of both backends.
type (
	Tx     = kv.Tx
	Bucket = kv.Bucket
	Cursor = kv.Cursor
)

// Backend kinds.
const (
	KindBolt = "bbolt"
	KindEtcd = "etcd"
)

// KeySchemaVersion is the meta key of the schema version (uint64 big endian).
var KeySchemaVersion = []byte("schema_version")

// ErrLocked means another process holds the file.
var ErrLocked = errors.New("database is locked by another process")

// ErrNewerSchema means the file was written by a newer accords-mcp.
var ErrNewerSchema = errors.New("database schema is newer than this binary supports")

// ErrDamaged means the file is cut short or has no valid meta page; it is
// refused before bbolt maps it (and crashes with SIGBUS).
var ErrDamaged = errors.New("the database file is damaged")

// Options tune Open.
type Options struct {
	// LockTimeout bounds the wait for the file lock (default 2s).
	LockTimeout time.Duration
	// ReadOnly opens without migrating (doctor, backup of a foreign file).
	ReadOnly bool
	// Migrations overrides the migration list (tests of older schemas).
	Migrations []migrations.Migration
}

// DB is an open store with its schema up to date; Replace can swap the file
// under it, so services keep their *DB across a restore.
type DB struct {
	bolt atomic.Pointer[bolt.DB]
	// file is the identity (fs.FileInfo) of the file bolt has open.
	file atomic.Value
	etcd *etcdkv.Backend
	// closeEtcd closes the etcd client (set by OpenEtcd).
	closeEtcd func() error
	path      string
	opts      Options
	// BackupPath is the copy made before the last migration, if any.
	BackupPath string
}

// Open creates or opens the database at path (folder 0700, file 0600),
// refuses an unsafe folder (unless read-only), a damaged file or a newer
// schema, and applies pending migrations after copying the file aside.
func Open(path string, opts Options) (*DB, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.Migrations == nil {
		opts.Migrations = migrations.All()
	}
	dir := filepath.Dir(path)
	if !opts.ReadOnly {
		// The folder will hold what the server writes (the database, its
		// key, its socket): another user must not be able to write there.
		if err := privdir.Ensure(dir); err != nil {
			if errors.Is(err, privdir.ErrUnsafe) {
				return nil, err
			}
			return nil, fmt.Errorf("create database folder %s: %w", dir, err)
		}
	} else if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create database folder %s: %w", dir, err)
		}
	}
	db := &DB{path: path, opts: opts}
	if err := db.open(); err != nil {
		return nil, err
	}
	return db, nil
}

// open opens the file and checks or migrates its schema.
func (db *DB) open() error {
	b, fi, err := openLocked(db.path, db.opts)
	if err != nil {
		return err
	}
	db.bolt.Store(b)
	db.file.Store(fi)
	migs := db.opts.Migrations
	if db.opts.ReadOnly {
		v, err := db.SchemaVersion()
		if err == nil && v > len(migs) {
			b.Close()
			return fmt.Errorf("%s: %w (file has version %d, this binary supports %d)", db.path, ErrNewerSchema, v, len(migs))
		}
		return nil
	}
	if err := db.migrate(migs); err != nil {
		b.Close()
		return err
	}
	return nil
}

// Replace closes the file, runs swap, and opens and migrates the new file
// under the same *DB; if that fails, undo (if set) restores the old one.
// The caller makes sure no transaction runs meanwhile.
func (db *DB) Replace(swap func() error, undo func() error) error {
	if db.opts.ReadOnly {
		return errors.New("store: cannot replace a database opened read-only")
	}
	if db.etcd != nil {
		return errors.New("store: an etcd store is restored in place, not replaced")
	}
	if err := db.b().Close(); err != nil {
		return fmt.Errorf("close %s before the swap: %w", db.path, err)
	}
	if err := swap(); err != nil {
		if oerr := db.open(); oerr != nil {
			return fmt.Errorf("%w; reopening the previous database also failed: %w", err, oerr)
		}
		return err
	}
	err := db.open()
	if err == nil {
		return nil
	}
	if undo == nil {
		return err
	}
	if uerr := undo(); uerr != nil {
		return fmt.Errorf("open the new database: %w; putting the previous one back failed: %w", err, uerr)
	}
	if oerr := db.open(); oerr != nil {
		return fmt.Errorf("open the new database: %w; reopening the previous one failed: %w", err, oerr)
	}
	return fmt.Errorf("open the new database: %w (the previous database is back in place)", err)
}

func (db *DB) b() *bolt.DB { return db.bolt.Load() }

// openLocked opens path and checks that it still names the file it locked:
// a restore renames a new file in while holding the old one's lock, and a
// waiter would otherwise serve the replaced database. It then opens again.
func openLocked(path string, opts Options) (*bolt.DB, fs.FileInfo, error) {
	for range 3 {
		var opened *os.File
		b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout, ReadOnly: opts.ReadOnly,
			InitialMmapSize: initialMmapSize(path),
			OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, perm)
				if err != nil {
					return nil, err
				}
				// The very file bbolt is about to map is checked.
				if err := checkFile(f); err != nil {
					f.Close()
					return nil, err
				}
				opened = f
				return f, nil
			}})
		if err != nil {
			if errors.Is(err, ErrDamaged) {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			if errors.Is(err, bolterr.ErrTimeout) {
				return nil, nil, fmt.Errorf("open %s: %w (held by a process that is not a daemon answering on its socket: an accords-mcp command in progress, or an older accords-mcp; find it with fuser)", path, ErrLocked)
			}
			return nil, nil, fmt.Errorf("open database %s: %w", path, err)
		}
		if fi, ok := stillThere(path, opened); ok {
			return b, fi, nil
		}
		_ = b.Close()
	}
	return nil, nil, fmt.Errorf("open database %s: the file was replaced again and again while it was being opened", path)
}

// checkFile refuses a file bbolt must not map (store/boltfile); an empty
// file is new.
func checkFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() == 0 {
		return nil
	}
	if _, err := boltfile.Check(f, fi.Size()); err != nil {
		return fmt.Errorf("%w: %w; restore the last good backup (accords-mcp restore FILE)", ErrDamaged, err)
	}
	return nil
}

// initialMmapSize maps 1 GiB beyond the file: growing past the mapping
// remaps, which waits for every open read transaction, and the background
// index rebuild holds one for minutes. Address space only.
func initialMmapSize(path string) int {
	const headroom = 1 << 30
	if fi, err := os.Stat(path); err == nil {
		return int(fi.Size()) + headroom
	}
	return headroom
}

// stillThere reports whether path names f, and f's identity.
func stillThere(path string, f *os.File) (fs.FileInfo, bool) {
	if f == nil {
		return nil, false
	}
	locked, err := f.Stat()
	if err != nil {
		return nil, false
	}
	now, err := os.Stat(path)
	return locked, err == nil && os.SameFile(locked, now)
}

// OnDisk errs when path no longer names the open file (removed or replaced
// other than by Replace); always nil on etcd.
func (db *DB) OnDisk() error {
	if db.etcd != nil {
		return nil
	}
	opened, _ := db.file.Load().(fs.FileInfo)
	now, err := os.Stat(db.path)
	switch {
	case err != nil:
		return fmt.Errorf("the database file: %w", err)
	case opened == nil || !os.SameFile(opened, now):
		return fmt.Errorf("%s is no longer the database file this process has open (replaced outside accords-mcp)", db.path)
	}
	return nil
}

// SchemaVersion reads the stored schema version (0 for a new file).
func (db *DB) SchemaVersion() (int, error) {
	v := 0
	err := db.View(func(tx Tx) error {
		v = readVersion(tx)
		return nil
	})
	return v, err
}

func readVersion(tx Tx) int {
	m := tx.Bucket(BucketMeta)
	if m == nil {
		return 0
	}
	raw := m.Get(KeySchemaVersion)
	if len(raw) != 8 {
		return 0
	}
	return int(binary.BigEndian.Uint64(raw))
}

func (db *DB) migrate(migs []migrations.Migration) error {
	current, err := db.SchemaVersion()
	if err != nil {
		return err
	}
	latest := len(migs)
	if current > latest {
		return fmt.Errorf("%s: %w (file has version %d, this binary supports %d); upgrade accords-mcp or restore an older backup", db.path, ErrNewerSchema, current, latest)
	}
	if current == latest {
		return nil
	}
	if current > 0 && db.etcd == nil {
		// Copy aside before touching an existing schema, so a failed or
		// unwanted upgrade can be undone by hand.
		bak := fmt.Sprintf("%s.pre-v%d-%s.bak", db.path, latest, time.Now().UTC().Format("20060102T150405Z"))
		if err := db.b().View(func(tx *bolt.Tx) error { return tx.CopyFile(bak, 0o600) }); err != nil {
			return fmt.Errorf("copy %s aside before migrating: %w", db.path, err)
		}
		db.BackupPath = bak
	}
	for _, m := range migs[current:] {
		if err := db.Update(func(tx Tx) error {
			if readVersion(tx) >= m.Version {
				return nil // another replica applied it meanwhile
			}
			if err := m.Apply(tx); err != nil {
				return err
			}
			meta, err := tx.CreateBucketIfNotExists(BucketMeta)
			if err != nil {
				return err
			}
			return meta.Put(KeySchemaVersion, U64(uint64(m.Version)))
		}); err != nil {
			return fmt.Errorf("migration %d (%s) of %s: %w", m.Version, m.Name, db.path, err)
		}
	}
	return nil
}

// Path is the database file path (for etcd, the store's URL).
func (db *DB) Path() string { return db.path }

// Kind is KindBolt or KindEtcd.
func (db *DB) Kind() string {
	if db.etcd != nil {
		return KindEtcd
	}
	return KindBolt
}

// Bolt exposes the bbolt handle (nil on etcd).
func (db *DB) Bolt() *bolt.DB {
	if db.etcd != nil {
		return nil
	}
	return db.b()
}

// Etcd is the etcd backend (nil on bbolt).
func (db *DB) Etcd() *etcdkv.Backend { return db.etcd }

// View runs a read transaction.
func (db *DB) View(fn func(tx Tx) error) error {
	if db.etcd != nil {
		return db.etcd.View(context.Background(), fn)
	}
	return db.b().View(func(tx *bolt.Tx) error { return fn(kv.BoltTx(tx)) })
}

// Update runs a write transaction. On etcd fn may run more than once (a
// conflict reruns it), so it must have no outside effects a rerun repeats.
// On bbolt a transaction that changed nothing is rolled back, not
// committed.
func (db *DB) Update(fn func(tx Tx) error) error {
	if db.etcd != nil {
		return db.etcd.Update(context.Background(), fn)
	}
	err := db.b().Update(func(tx *bolt.Tx) error {
		wrote := false
		if err := fn(kv.BoltTxTracking(tx, &wrote)); err != nil {
			return err
		}
		if !wrote {
			return errNothingWritten
		}
		return nil
	})
	if errors.Is(err, errNothingWritten) {
		return nil
	}
	return err
}

// errNothingWritten rolls back an Update that changed nothing; Update
// returns nil for it.
var errNothingWritten = errors.New("store: nothing written")

// Close closes the file or the etcd client.
func (db *DB) Close() error {
	if db.etcd != nil {
		return db.closeEtcd()
	}
	return db.b().Close()
}

// Ping reports whether the store is readable and has its meta bucket; the
// health endpoint uses it.
func (db *DB) Ping() error {
	if db.etcd != nil {
		// A round trip: bucket markers are remembered between transactions.
		if _, err := db.etcd.Revision(context.Background()); err != nil {
			return err
		}
	}
	return db.View(func(tx Tx) error {
		if tx.Bucket(BucketMeta) == nil {
			return errors.New("meta bucket missing")
		}
		return nil
	})
}

// U64 encodes n big endian, the key order bbolt cursors iterate in.
func U64(n uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, n)
	return b
}

// GetJSON decodes the value at key into v; it reports false when absent.
func GetJSON(b Bucket, key []byte, v any) (bool, error) {
	raw := b.Get(key)
	if raw == nil {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, fmt.Errorf("decode %q: %w", key, err)
	}
	return true, nil
}

// PutJSON encodes v at key.
func PutJSON(b Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, raw)
}
