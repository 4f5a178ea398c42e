package backup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
	bolt "go.etcd.io/bbolt"
)

// ErrInvalid wraps every reason a file is not a usable backup.
var ErrInvalid = errors.New("not a valid accords-mcp backup")

// maxCheckErrors bounds the consistency errors reported.
const maxCheckErrors = 5

// Info describes a verified backup file.
type Info struct {
	Path          string        `json:"path"`
	Size          int64         `json:"size"`
	SchemaVersion int           `json:"schema_version"`
	LatestSchema  int           `json:"latest_schema"`
	Buckets       []string      `json:"buckets"`
	Audit         *audit.Report `json:"audit,omitempty"`
}

// Check verifies that path is a usable accords-mcp database: a consistent
// bbolt file with a known schema version, exactly that version's top-level
// buckets and a verifying audit chain. It opens the file read-only; every
// refusal wraps ErrInvalid or store.ErrNewerSchema.
func Check(path string) (Info, error) { return check(path, migrations.All()) }

func check(path string, migs []migrations.Migration) (Info, error) {
	info := Info{Path: path, LatestSchema: len(migs)}
	fi, err := os.Stat(path)
	if err != nil {
		return info, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if !fi.Mode().IsRegular() {
		return info, fmt.Errorf("%w: %s is not a regular file", ErrInvalid, path)
	}
	info.Size = fi.Size()
	// A shorter file than two smallest pages cannot hold the meta pages.
	if fi.Size() < 2*1024 {
		return info, fmt.Errorf("%w: file is %d bytes, too short to be a bbolt database (empty or truncated)", ErrInvalid, fi.Size())
	}
	if err := preflight(path); err != nil {
		return info, err
	}
	if err := inspect(path, &info, migs); err != nil {
		return info, err
	}
	rep, err := verifyAudit(path, migs)
	if err != nil {
		return info, err
	}
	info.Audit = &rep
	if !rep.ChainOK() {
		msg := "audit chain does not verify"
		if rep.Problem != nil {
			msg = fmt.Sprintf("audit chain does not verify: %s at receipt %d: %s", rep.Problem.Kind, rep.Problem.Seq, rep.Problem.Message)
		}
		return info, fmt.Errorf("%w: %s", ErrInvalid, msg)
	}
	return info, nil
}

// inspect opens the file read-only; a damaged file can make bbolt panic on
// access, which is turned into a refusal.
func inspect(path string, info *Info, migs []migrations.Migration) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bbolt cannot read the file (%v); it is damaged or truncated", ErrInvalid, r)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		return fmt.Errorf("%w: bbolt cannot open it: %w", ErrInvalid, err)
	}
	defer db.Close()
	return db.View(func(btx *bolt.Tx) error {
		tx := kv.BoltTx(btx)
		var problems []string
		for e := range btx.Check() {
			if len(problems) < maxCheckErrors {
				problems = append(problems, e.Error())
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("%w: consistency check failed: %v", ErrInvalid, problems)
		}
		_ = tx.ForEach(func(name []byte, _ store.Bucket) error {
			info.Buckets = append(info.Buckets, string(name))
			return nil
		})
		sort.Strings(info.Buckets)
		info.SchemaVersion = schemaOf(tx)
		if tx.Bucket(store.BucketMeta) == nil || info.SchemaVersion == 0 {
			return fmt.Errorf("%w: no meta/schema_version: this bbolt file was not written by accords-mcp", ErrInvalid)
		}
		if info.SchemaVersion > info.LatestSchema {
			return fmt.Errorf("%w: backup has schema version %d, this binary supports up to %d; restore it with a newer accords-mcp", store.ErrNewerSchema, info.SchemaVersion, info.LatestSchema)
		}
		want, err := bucketsAt(info.SchemaVersion, migs)
		if err != nil {
			return err
		}
		if missing, extra := diff(want, info.Buckets); len(missing) > 0 || len(extra) > 0 {
			return fmt.Errorf("%w: top-level buckets do not match schema version %d (missing %v, unknown %v)", ErrInvalid, info.SchemaVersion, missing, extra)
		}
		return nil
	})
}

func verifyAudit(path string, migs []migrations.Migration) (rep audit.Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading the audit log failed (%v)", ErrInvalid, r)
		}
	}()
	db, err := store.Open(path, store.Options{ReadOnly: true, Migrations: migs})
	if err != nil {
		return rep, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer db.Close()
	// No key here: the chain, the tree and the notes' structure are
	// checked; signatures are for audit verify.
	rep, err = audit.Verify(db, audit.VerifyOptions{})
	if err != nil {
		return rep, fmt.Errorf("%w: reading the audit log: %w", ErrInvalid, err)
	}
	return rep, nil
}

func diff(want, got []string) (missing, extra []string) {
	w := map[string]bool{}
	for _, n := range want {
		w[n] = true
	}
	g := map[string]bool{}
	for _, n := range got {
		g[n] = true
		if !w[n] {
			extra = append(extra, n)
		}
	}
	for _, n := range want {
		if !g[n] {
			missing = append(missing, n)
		}
	}
	return missing, extra
}

var (
	bucketsMu    sync.Mutex
	bucketsCache = map[int][]string{}
)

// BucketsAt lists the top-level buckets of a database at schema version v.
func BucketsAt(v int) ([]string, error) { return bucketsAt(v, migrations.All()) }

// bucketsAt applies migrations 1..v to a scratch file, so the list never
// drifts from the migrations.
func bucketsAt(v int, all []migrations.Migration) ([]string, error) {
	standard := len(all) == migrations.Latest()
	bucketsMu.Lock()
	defer bucketsMu.Unlock()
	if b, ok := bucketsCache[v]; ok && standard {
		return b, nil
	}
	if v < 1 || v > len(all) {
		return nil, fmt.Errorf("%w: unknown schema version %d", ErrInvalid, v)
	}
	dir, err := os.MkdirTemp("", "accords-schema-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	db, err := store.Open(filepath.Join(dir, "scratch.db"), store.Options{Migrations: all[:v]})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var names []string
	err = db.View(func(tx store.Tx) error {
		return tx.ForEach(func(name []byte, _ store.Bucket) error {
			names = append(names, string(name))
			return nil
		})
	})
	sort.Strings(names)
	if standard {
		bucketsCache[v] = names
	}
	return names, err
}
