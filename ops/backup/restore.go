package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/platform/filelock"
	"github.com/accordsai/accords-mcp/store"
)

// RestoreOptions configure Restore.
type RestoreOptions struct {
	// DBPath is the live database file to replace.
	DBPath string
	// IndexDir is the derived search index beside it; it is removed before
	// the swap so no stale index can outlive the data it was built from.
	IndexDir string
	// LockTimeout bounds the wait for the database lock (default 500ms).
	LockTimeout time.Duration
	// Reindex rebuilds the index from the restored store; nil leaves the
	// rebuild to the next start (the index is rebuilt whenever missing).
	Reindex func(db *store.DB) (docs int, err error)
	// Now is the clock for the .bak name.
	Now func() time.Time
	// Migrations overrides the schema migrations (tests of upgrades).
	Migrations []migrations.Migration
	// Record writes a signed record of what the restore discarded into the
	// restored audit log; nil leaves none, and the result says so.
	Record func(db *store.DB, d audit.RestoreDiff) (audit.Ref, error)
}

// Result reports what Restore did.
type Result struct {
	Info
	// Previous is the kept copy of the replaced database ("" if none).
	Previous string `json:"previous,omitempty"`
	// MigratedFrom is the backup's schema version when it was migrated.
	MigratedFrom int `json:"migrated_from,omitempty"`
	// Reindexed is true when the index was rebuilt; IndexDocs counts it.
	Reindexed bool `json:"reindexed"`
	IndexDocs int  `json:"index_docs,omitempty"`
	// IndexError is set when the data was restored but the rebuild failed
	// (the next start retries it).
	IndexError string `json:"index_error,omitempty"`
	// AuditRestore compares the replaced database's audit log with the
	// backup's: how many receipts the restore discards.
	AuditRestore *audit.RestoreDiff `json:"audit_restore,omitempty"`
	// AuditCompareError says why the replaced log could not be read (a
	// damaged database); AuditRestore then names only the backup's.
	AuditCompareError string `json:"audit_compare_error,omitempty"`
	// AuditRecord is the restore's receipt in the restored log;
	// AuditRecordError says why there is none.
	AuditRecord      *audit.Ref `json:"audit_record,omitempty"`
	AuditRecordError string     `json:"audit_record_error,omitempty"`
}

// CompareAudit fills res.AuditRestore, the staged log against current's; an
// unreadable current database is reported, not fatal.
func (res *Result) CompareAudit(st *Staged, current *store.DB, currentErr error, src string, migs []migrations.Migration) {
	staged, err := store.Open(st.Path(), store.Options{ReadOnly: true, Migrations: migs})
	if err != nil {
		res.AuditCompareError = err.Error()
		return
	}
	defer staged.Close()
	if currentErr != nil {
		res.AuditCompareError = "the current database could not be read: " + currentErr.Error()
		current = nil
	}
	d, err := audit.CompareForRestore(current, staged, src)
	if err != nil {
		res.AuditCompareError = err.Error()
	}
	res.AuditRestore = &d
}

// RecordAudit writes the restore into db's log with record (see
// RestoreOptions.Record).
func (res *Result) RecordAudit(db *store.DB, record func(*store.DB, audit.RestoreDiff) (audit.Ref, error)) {
	switch {
	case record == nil:
		res.AuditRecordError = "the restore is not recorded in the audit log (no audit key)"
		return
	case res.AuditRestore == nil:
		res.AuditRestore = &audit.RestoreDiff{}
	}
	ref, err := record(db, *res.AuditRestore)
	if err != nil {
		res.AuditRecordError = err.Error()
		return
	}
	res.AuditRecord = &ref
}

// Restore replaces the database at o.DBPath with the backup from src (a
// path, or "-" for r). It refuses while another process holds the database,
// checks and migrates the backup first, keeps the current file as
// <db>.<UTC time>.bak, renames the restored file in and rebuilds the index.
// A refusal leaves everything as it was.
func Restore(src string, r io.Reader, o RestoreOptions) (res Result, err error) {
	o = o.withDefaults()
	dir := filepath.Dir(o.DBPath)
	if _, serr := os.Stat(dir); errors.Is(serr, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return res, fmt.Errorf("create database folder: %w", err)
		}
		// A refused restore leaves no trace, not even the folder.
		defer func() {
			if err != nil {
				os.Remove(dir)
			}
		}()
	}

	// Refuse early when a daemon runs, before copying anything.
	if err := probeLock(o.DBPath, o.LockTimeout); err != nil {
		return res, err
	}
	st, res, err := Stage(src, r, o)
	if err != nil {
		return res, err
	}
	defer st.Discard()
	compareWithCurrent(&res, st, src, o)

	// The backup is good; take the lock for the swap only, so a daemon blocked
	// on the old file's lock cannot open it afterwards.
	unlock, err := lockLive(o.DBPath, o.LockTimeout)
	if err != nil {
		return res, err
	}
	res.Previous, err = st.Swap(o)
	unlock()
	if err != nil {
		return res, err
	}

	if o.Record == nil && o.Reindex == nil {
		res.RecordAudit(nil, nil)
		return res, nil
	}
	db, err := store.Open(o.DBPath, store.Options{LockTimeout: o.LockTimeout, Migrations: o.Migrations})
	if err != nil {
		res.IndexError = err.Error()
		res.AuditRecordError = err.Error()
		return res, nil
	}
	res.RecordAudit(db, o.Record)
	var n int
	if o.Reindex != nil {
		n, err = o.Reindex(db)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		res.IndexError = err.Error()
		return res, nil
	}
	res.Reindexed, res.IndexDocs = o.Reindex != nil, n
	return res, nil
}

// compareWithCurrent compares the staged backup's audit log with the one
// of the database it replaces (read-only, before the swap).
func compareWithCurrent(res *Result, st *Staged, src string, o RestoreOptions) {
	if _, err := os.Stat(o.DBPath); errors.Is(err, fs.ErrNotExist) {
		res.CompareAudit(st, nil, nil, src, o.Migrations)
		return
	}
	cur, err := store.Open(o.DBPath, store.Options{ReadOnly: true, LockTimeout: o.LockTimeout, Migrations: o.Migrations})
	if err == nil {
		defer cur.Close()
	}
	res.CompareAudit(st, cur, err, src, o.Migrations)
}

func (o RestoreOptions) withDefaults() RestoreOptions {
	if o.LockTimeout <= 0 {
		o.LockTimeout = 500 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Migrations == nil {
		o.Migrations = migrations.All()
	}
	return o
}

// Staged is a checked, migrated backup beside the database, ready to swap.
type Staged struct {
	path    string
	swapped bool
}

// Stage copies the backup from src into a private file beside o.DBPath
// (atomic rename later), checks and migrates it, and leaves the database
// alone; Discard removes the staged file unless it was swapped in.
func Stage(src string, r io.Reader, o RestoreOptions) (*Staged, Result, error) {
	o = o.withDefaults()
	var res Result
	dir := filepath.Dir(o.DBPath)
	stage, err := tempFile(dir, "."+filepath.Base(o.DBPath)+".restore-")
	if err != nil {
		return nil, res, err
	}
	st := &Staged{path: stage.Name()}
	fail := func(err error) (*Staged, Result, error) {
		st.Discard()
		return nil, res, err
	}
	if err := copyInto(stage, src, r); err != nil {
		stage.Close()
		return fail(err)
	}
	if err := stage.Close(); err != nil {
		return fail(err)
	}
	info, err := check(st.path, o.Migrations)
	info.Path = src
	res.Info = info
	if err != nil {
		return fail(err)
	}
	if info.SchemaVersion < info.LatestSchema {
		db, err := store.Open(st.path, store.Options{Migrations: o.Migrations})
		if err != nil {
			return fail(fmt.Errorf("migrate backup from schema %d: %w", info.SchemaVersion, err))
		}
		// store.Open copies an older file aside before migrating; the
		// backup itself is that copy, so drop the duplicate.
		if db.BackupPath != "" {
			os.Remove(db.BackupPath)
		}
		if err := db.Close(); err != nil {
			return fail(err)
		}
		res.MigratedFrom = info.SchemaVersion
		res.SchemaVersion = info.LatestSchema
	}
	return st, res, nil
}

// Swap removes the index, keeps the current database as <db>.<UTC time>.bak
// (returned, "" when none) and renames the staged file in. The caller makes
// sure nothing has the database open for writing.
func (st *Staged) Swap(o RestoreOptions) (previous string, err error) {
	o = o.withDefaults()
	if st.swapped {
		return "", errors.New("backup already swapped in")
	}
	if o.IndexDir != "" {
		if err := removeAll(o.IndexDir); err != nil {
			return "", fmt.Errorf("remove the old index %s: %w", o.IndexDir, err)
		}
	}
	if _, err := os.Stat(o.DBPath); err == nil {
		prev := fmt.Sprintf("%s.%s.bak", o.DBPath, o.Now().UTC().Format("20060102T150405.000Z"))
		if err := keepPrevious(o.DBPath, prev); err != nil {
			return "", fmt.Errorf("keep the current database as %s: %w", prev, err)
		}
		previous = prev
	}
	if err := os.Rename(st.path, o.DBPath); err != nil {
		return previous, fmt.Errorf("move the restored database into place: %w", err)
	}
	st.swapped = true
	syncDir(filepath.Dir(o.DBPath))
	return previous, nil
}

// Unswap puts previous (what Swap kept) back at dbPath: the daemon's way
// back when the restored file cannot be opened after all.
func Unswap(dbPath, previous string) error {
	if previous == "" {
		return errors.New("no previous database to put back")
	}
	if err := os.Rename(previous, dbPath); err != nil {
		return err
	}
	syncDir(filepath.Dir(dbPath))
	return nil
}

// Discard removes the staged file unless it was swapped in.
func (st *Staged) Discard() {
	if st != nil && !st.swapped {
		os.Remove(st.path)
	}
}

// lockLive takes the live database's lock (a no-op when there is no
// database yet), refusing with store.ErrLocked while a daemon holds it.
func lockLive(path string, timeout time.Duration) (func(), error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	} else if err != nil {
		return nil, err
	}
	// bbolt's lock: it fails while a daemon has the file open, which need
	// not be a readable database.
	f, err := filelock.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	release, err := filelock.Lock(ctx, f, 50*time.Millisecond)
	if err != nil {
		f.Close()
		if errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("%s: %w; stop the daemon (or wait for the backup or doctor run using it) and run restore again", path, store.ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		release()
		f.Close()
	}, nil
}

func probeLock(path string, timeout time.Duration) error {
	u, err := lockLive(path, timeout)
	if err != nil {
		return err
	}
	u()
	return nil
}

func copyInto(dst *os.File, src string, r io.Reader) error {
	if src != "-" {
		f, err := os.Open(src)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file", ErrInvalid, src)
		}
		r = f
	}
	if r == nil {
		return fmt.Errorf("%w: no input", ErrInvalid)
	}
	if _, err := io.Copy(dst, r); err != nil {
		return fmt.Errorf("read backup: %w", err)
	}
	return dst.Sync()
}

// keepPrevious hard-links the current file to prev (instant, and the live
// path never disappears); it copies when the filesystem has no hard links.
func keepPrevious(cur, prev string) error {
	if err := os.Link(cur, prev); err == nil {
		return nil
	}
	in, err := os.Open(cur)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(prev, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(prev)
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// removeAll renames the folder aside first so a crash mid-delete never
// leaves a half-deleted index under the live name.
func removeAll(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	aside := fmt.Sprintf("%s.removing-%d-%d", dir, os.Getpid(), time.Now().UnixNano())
	if err := os.Rename(dir, aside); err != nil {
		return err
	}
	return os.RemoveAll(aside)
}

// Path is the staged, checked file.
func (st *Staged) Path() string { return st.path }

// RestoreEtcd loads the backup from src into the etcd store db: staged and
// checked as Restore does, refused while replicas are registered (or
// register within store.FleetRejoin), then the store's contents are
// replaced and this replica's index removed; others rebuild at next start.
func RestoreEtcd(db *store.DB, src string, r io.Reader, o RestoreOptions) (Result, error) {
	o = o.withDefaults()
	st, res, err := Stage(src, r, o)
	if err != nil {
		return res, err
	}
	defer st.Discard()
	status, err := db.EtcdStatus(context.Background())
	if err != nil {
		return res, err
	}
	res.CompareAudit(st, db, nil, src, o.Migrations)
	if status.Replicas > 0 {
		return res, fmt.Errorf("%d replica(s) are registered on %s: stop every replica before restoring into etcd (a replica killed less than %s ago still counts)", status.Replicas, db.Path(), store.FleetTTL)
	}
	// A replica whose lease lapsed while etcd did not answer is absent
	// from the list until it registers again, within store.FleetRejoin.
	late, err := db.FleetMembers(context.Background(), store.FleetRejoin)
	if err != nil {
		return res, err
	}
	if late > 0 {
		return res, fmt.Errorf("a replica registered on %s while the restore checked that none serves: stop every replica before restoring into etcd", db.Path())
	}
	staged, err := store.Open(st.Path(), store.Options{ReadOnly: true, Migrations: o.Migrations})
	if err != nil {
		return res, err
	}
	defer staged.Close()
	// Move the catalog revision past both histories without a change log, so
	// every replica's index sees itself behind and rebuilds.
	var before uint64
	if err := db.View(func(tx store.Tx) error {
		if c := tx.Bucket(store.BucketCatalog); c != nil {
			before = u64Of(c.Get([]byte("rev")))
		}
		return nil
	}); err != nil {
		return res, err
	}
	skip := func(path [][]byte, k []byte) bool {
		return len(path) == 1 && string(path[0]) == string(store.BucketCatalog) && strings.HasPrefix(string(k), "l/")
	}
	finish := func(tx store.Tx) error {
		c, err := tx.CreateBucketIfNotExists(store.BucketCatalog)
		if err != nil {
			return err
		}
		return c.Put([]byte("rev"), store.U64(max(before, u64Of(c.Get([]byte("rev"))))+1))
	}
	if _, err := db.LoadFrom(staged, skip, finish); err != nil {
		return res, err
	}
	res.RecordAudit(db, o.Record)
	if o.IndexDir != "" {
		if err := removeAll(o.IndexDir); err != nil {
			return res, fmt.Errorf("the store is restored, but this replica's index %s could not be removed: %w", o.IndexDir, err)
		}
	}
	return res, nil
}

func u64Of(raw []byte) uint64 {
	if len(raw) != 8 {
		return 0
	}
	var n uint64
	for _, c := range raw {
		n = n<<8 | uint64(c)
	}
	return n
}
