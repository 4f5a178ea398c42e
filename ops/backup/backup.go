// Package backup takes consistent snapshots of the bbolt file and restores
// them; a restore changes nothing until the candidate passed every check.
package backup

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
	bolt "go.etcd.io/bbolt"
)

// Snapshot writes a consistent copy of db to w from one read transaction,
// so writers keep committing while it runs. It returns the bytes written.
func Snapshot(db *store.DB, w io.Writer) (int64, error) {
	if db.Kind() == store.KindEtcd {
		return SnapshotTo(db, nil, w)
	}
	var n int64
	err := db.View(func(t store.Tx) error {
		tx, err := boltTx(t)
		if err != nil {
			return err
		}
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// ErrNotFile means the store is not a bbolt file (etcd): it is backed up
// by a logical export instead.
var ErrNotFile = errors.New("the store is not a bbolt file")

func boltTx(t store.Tx) (*bolt.Tx, error) {
	tx, ok := kv.UnwrapBolt(t)
	if !ok {
		return nil, ErrNotFile
	}
	return tx, nil
}

// SnapshotTo is Snapshot with the snapshot size known before the first
// byte (for Content-Length): begin is called inside the transaction.
func SnapshotTo(db *store.DB, begin func(size int64, schema int), w io.Writer) (int64, error) {
	if db.Kind() == store.KindEtcd {
		return exportEtcd(db, begin, w)
	}
	var n int64
	err := db.View(func(t store.Tx) error {
		tx, err := boltTx(t)
		if err != nil {
			return err
		}
		if begin != nil {
			begin(tx.Size(), schemaOf(t))
		}
		n, err = tx.WriteTo(w)
		return err
	})
	return n, err
}

// WriteFile creates path (0600) from what fill writes, via a synced
// temporary file renamed over it; on error nothing is left behind.
func WriteFile(path string, fill func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("folder %s does not exist; create it first (mkdir -m 700 %s)", dir, dir)
	}
	tmp, err := tempFile(dir, "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	name := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(name)
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", name, err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("rename into %s: %w", path, err)
	}
	ok = true
	syncDir(dir)
	return nil
}

// tempFile creates a new 0600 file in dir (O_EXCL); the name carries the
// process id, so CleanStale can tell a dead process's file from one in use.
func tempFile(dir, prefix string) (*os.File, error) {
	for range 16 {
		var b [6]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("%s%d-%s", prefix, os.Getpid(), hex.EncodeToString(b[:]))
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create temporary file in %s: %w", dir, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("create temporary file in %s: too many collisions", dir)
}

// syncDir makes a rename durable; errors are ignored because some
// filesystems do not support syncing a directory.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

func schemaOf(tx store.Tx) int {
	m := tx.Bucket(store.BucketMeta)
	if m == nil {
		return 0
	}
	raw := m.Get(store.KeySchemaVersion)
	if len(raw) != 8 {
		return 0
	}
	var v uint64
	for _, b := range raw {
		v = v<<8 | uint64(b)
	}
	return int(v)
}

// exportEtcd writes an etcd store, read at one revision, as a bbolt file,
// so its backup is checked, restored and verified like a bbolt one.
func exportEtcd(db *store.DB, begin func(size int64, schema int), w io.Writer) (int64, error) {
	dir, err := os.MkdirTemp("", "accords-etcd-export-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "export.db")
	out, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		return 0, err
	}
	schema := 0
	err = db.View(func(src store.Tx) error {
		schema = schemaOf(src)
		return out.Update(func(dst *bolt.Tx) error { return store.CopyTx(kv.BoltTx(dst), src) })
	})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("export the etcd store: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if begin != nil {
		begin(fi.Size(), schema)
	}
	return io.Copy(w, f)
}
