package backup_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/store/kv"
	"github.com/accordsai/accords-mcp/test/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	bolt "go.etcd.io/bbolt"
)

// fingerprint is the folder's file names with their content hashes.
func fingerprint(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[p] = sha256.Sum256(b)
		} else {
			out[p] = [32]byte{}
		}
		return nil
	}))
	return out
}

func goodBackup(t *testing.T) (string, []byte) {
	t.Helper()
	cfg := testenv.Config(t)
	a := testenv.Open(t, cfg)
	_, err := a.Sessions.Configure(context.Background(), "default", "http://vault.example", "vc_tok_backup_value", 0)
	require.NoError(t, err)
	writeReceipts(t, a.Audit, 5)
	p := filepath.Join(t.TempDir(), "good.db")
	require.NoError(t, backup.WriteFile(p, func(w io.Writer) error { _, err := backup.Snapshot(a.DB, w); return err }))
	raw, err := os.ReadFile(p)
	require.NoError(t, err)
	return p, raw
}

func newerSchemaFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "newer.db")
	future := append(migrations.All(), migrations.Migration{Version: migrations.Latest() + 1, Name: "future", Apply: func(tx store.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("future"))
		return err
	}})
	db, err := store.Open(p, store.Options{Migrations: future})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	return p
}

func TestRestoreRefusesBadFilesAndChangesNothing(t *testing.T) {
	good, raw := goodBackup(t)
	_ = good
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	random := make([]byte, 64<<10)
	_, _ = rand.Read(random)
	foreign := filepath.Join(dir, "foreign.db")
	fdb, err := bolt.Open(foreign, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, fdb.Update(func(btx *bolt.Tx) error { tx := kv.BoltTx(btx); _, err := tx.CreateBucket([]byte("other")); return err }))
	require.NoError(t, fdb.Close())

	// A backup whose audit chain was edited after the fact.
	tampered := write("tampered.db", raw)
	tdb, err := bolt.Open(tampered, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, tdb.Update(func(btx *bolt.Tx) error {
		tx := kv.BoltTx(btx)
		rs := tx.Bucket(store.BucketAudit).Bucket([]byte("receipts"))
		require.NotNil(t, rs)
		k, v := rs.Cursor().First()
		return rs.Put(k, append([]byte{}, bytesReplace(v, "vaultclaw_session_status", "vaultclaw_session_clear_")...))
	}))
	require.NoError(t, tdb.Close())

	cases := []struct {
		name, path, reason string
		is                 error
	}{
		{"truncated", write("truncated.db", raw[:len(raw)/2]), "truncated", backup.ErrInvalid},
		{"truncated to one page", write("page.db", raw[:4096]), "truncated", backup.ErrInvalid},
		{"empty", write("empty.db", nil), "too short", backup.ErrInvalid},
		{"random", write("random.db", random), "no valid bbolt meta page", backup.ErrInvalid},
		{"not accords", foreign, "not written by accords-mcp", backup.ErrInvalid},
		{"newer schema", newerSchemaFile(t), fmt.Sprintf("schema version %d", migrations.Latest()+1), store.ErrNewerSchema},
		{"tampered audit", tampered, "audit chain does not verify", backup.ErrInvalid},
		{"missing", filepath.Join(dir, "nope.db"), "no such file", backup.ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testenv.Config(t)
			a := testenv.Open(t, cfg)
			_, err := a.Sessions.Configure(context.Background(), "default", "http://live.example", "vc_tok_live_value", 0)
			require.NoError(t, err)
			require.NoError(t, a.Close())
			require.NoError(t, os.MkdirAll(filepath.Join(cfg.IndexDir(), "x"), 0o700))
			folder := filepath.Dir(cfg.DBPath)
			before := fingerprint(t, folder)

			_, err = backup.Restore(tc.path, nil, backup.RestoreOptions{DBPath: cfg.DBPath, IndexDir: cfg.IndexDir()})
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.is)
			assert.Contains(t, err.Error(), tc.reason)
			assert.Equal(t, before, fingerprint(t, folder), "a refused restore changes nothing")
		})
	}
}

func bytesReplace(b []byte, old, new string) []byte {
	s := string(b)
	before, after, ok := strings.Cut(s, old)
	if !ok {
		return b
	}
	return []byte(before + new + after)
}

func TestRestoreRefusesWhileDaemonHoldsTheDatabase(t *testing.T) {
	good, _ := goodBackup(t)
	cfg := testenv.Config(t)
	a := testenv.Open(t, cfg) // holds the lock, as a daemon does
	folder := filepath.Dir(cfg.DBPath)
	// The live daemon's own index persister may touch the index folder;
	// Restore must not touch anything, so compare without that noise.
	withoutIndex := func(m map[string][32]byte) map[string][32]byte {
		for k := range m {
			if len(k) > len(cfg.IndexDir()) && k[:len(cfg.IndexDir())+1] == cfg.IndexDir()+"/" {
				delete(m, k)
			}
		}
		return m
	}
	before := withoutIndex(fingerprint(t, folder))
	_, err := backup.Restore(good, nil, backup.RestoreOptions{DBPath: cfg.DBPath, IndexDir: cfg.IndexDir()})
	require.Error(t, err)
	assert.True(t, errors.Is(err, store.ErrLocked), err)
	assert.Contains(t, err.Error(), "stop the daemon")
	assert.Equal(t, before, withoutIndex(fingerprint(t, folder)))
	_, err = os.Stat(cfg.IndexDir())
	assert.NoError(t, err, "the live index is left in place")
	require.NoError(t, a.DB.Ping())
}

func TestRestoreMigratesAnOlderBackup(t *testing.T) {
	good, _ := goodBackup(t)
	cfg := testenv.Config(t)
	future := append(migrations.All(), migrations.Migration{Version: migrations.Latest() + 1, Name: "future", Apply: func(tx store.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte("future"))
		return err
	}})
	res, err := backup.Restore(good, nil, backup.RestoreOptions{DBPath: cfg.DBPath, Migrations: future})
	require.NoError(t, err)
	assert.Equal(t, migrations.Latest(), res.MigratedFrom)
	assert.Equal(t, migrations.Latest()+1, res.SchemaVersion)
	entries, err := os.ReadDir(filepath.Dir(cfg.DBPath))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	assert.Equal(t, []string{"accords.db"}, names, "no staging or copy-aside files are left")
	db, err := store.Open(cfg.DBPath, store.Options{ReadOnly: true, Migrations: future})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(tx store.Tx) error {
		assert.NotNil(t, tx.Bucket([]byte("future")), "the migration ran")
		return nil
	}))
	raw, err := os.ReadFile(good)
	require.NoError(t, err)
	info, err := backup.Check(good)
	require.NoError(t, err, "the backup file itself is untouched (%d bytes)", len(raw))
	assert.Equal(t, migrations.Latest(), info.SchemaVersion)
}

func TestBucketsAtMatchesMigrations(t *testing.T) {
	b, err := backup.BucketsAt(1)
	require.NoError(t, err)
	assert.Equal(t, []string{"audit", "catalog", "handles", "meta", "policy_hash", "sessions", "sources"}, b)
	_, err = backup.BucketsAt(migrations.Latest() + 1)
	assert.Error(t, err)
}

func TestRestoreFromStdin(t *testing.T) {
	_, raw := goodBackup(t)
	cfg := testenv.Config(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	go func() { _, _ = w.Write(raw); _ = w.Close() }()
	res, err := backup.Restore("-", r, backup.RestoreOptions{DBPath: cfg.DBPath})
	require.NoError(t, err)
	assert.Equal(t, 5, res.Audit.Count)
}

func TestRefusedRestoreLeavesNoFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new-home")
	bad := filepath.Join(t.TempDir(), "bad.db")
	require.NoError(t, os.WriteFile(bad, []byte("definitely not bbolt, but long enough to get past the size check"+string(make([]byte, 8192))), 0o600))
	_, err := backup.Restore(bad, nil, backup.RestoreOptions{DBPath: filepath.Join(dir, "accords.db")})
	require.ErrorIs(t, err, backup.ErrInvalid)
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "no folder is created by a refused restore")
}
