package store_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/require"
)

func TestOpenCreatesPrivateFileAndFolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nested", "accords.db")
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	defer db.Close()

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	v, err := db.SchemaVersion()
	require.NoError(t, err)
	require.Equal(t, migrations.Latest(), v)
	require.NoError(t, db.Ping())
	require.Empty(t, db.BackupPath, "a new file needs no copy aside")
}

func TestOpenLockedFileFailsWithClearError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accords.db")
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	defer db.Close()

	start := time.Now()
	_, err = store.Open(path, store.Options{LockTimeout: 100 * time.Millisecond})
	require.ErrorIs(t, err, store.ErrLocked)
	require.Contains(t, err.Error(), path)
	require.Less(t, time.Since(start), 5*time.Second, "lock wait must be bounded")
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accords.db")
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Update(func(tx store.Tx) error {
		return tx.Bucket(store.BucketMeta).Put(store.KeySchemaVersion, store.U64(uint64(migrations.Latest()+1)))
	}))
	require.NoError(t, db.Close())
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	_, err = store.Open(path, store.Options{})
	require.ErrorIs(t, err, store.ErrNewerSchema)
	require.Contains(t, err.Error(), "upgrade accords-mcp")

	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused file must not be modified")
}

// TestMigrateFromEveryOlderVersion builds a file at each older schema
// version (by applying only the first n migrations, with a record written in
// that schema) and checks Open brings it to the latest version, keeps the
// record and copies the old file aside.
func TestMigrateFromEveryOlderVersion(t *testing.T) {
	all := migrations.All()
	for n := range all {
		t.Run(fmt.Sprintf("from_v%d", n), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "accords.db")
			old, err := store.Open(path, store.Options{Migrations: all[:n]})
			require.NoError(t, err)
			if n > 0 {
				require.NoError(t, old.Update(func(tx store.Tx) error {
					return tx.Bucket(store.BucketMeta).Put([]byte("fixture"), []byte("kept"))
				}))
			}
			require.NoError(t, old.Close())

			db, err := store.Open(path, store.Options{})
			require.NoError(t, err)
			defer db.Close()
			v, err := db.SchemaVersion()
			require.NoError(t, err)
			require.Equal(t, len(all), v)
			require.NoError(t, db.View(func(tx store.Tx) error {
				for _, b := range [][]byte{store.BucketMeta, store.BucketSessions, store.BucketCatalog, store.BucketSources, store.BucketPolicyHash, store.BucketHandles, store.BucketAudit} {
					require.NotNil(t, tx.Bucket(b), "bucket %s", b)
				}
				if n > 0 {
					require.Equal(t, "kept", string(tx.Bucket(store.BucketMeta).Get([]byte("fixture"))))
				}
				return nil
			}))
			if n > 0 {
				require.NotEmpty(t, db.BackupPath)
				_, err := os.Stat(db.BackupPath)
				require.NoError(t, err, "the pre-migration copy must exist")
			}
		})
	}
}

func TestFailedMigrationLeavesVersionUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "accords.db")
	migs := append([]migrations.Migration{}, migrations.All()...)
	migs = append(migs, migrations.Migration{Version: len(migs) + 1, Name: "broken", Apply: func(tx store.Tx) error {
		if _, err := tx.CreateBucket([]byte("half_done")); err != nil {
			return err
		}
		return os.ErrInvalid
	}})
	_, err := store.Open(path, store.Options{Migrations: migs})
	require.ErrorContains(t, err, "broken")

	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	defer db.Close()
	v, err := db.SchemaVersion()
	require.NoError(t, err)
	require.Equal(t, migrations.Latest(), v)
	require.NoError(t, db.View(func(tx store.Tx) error {
		require.Nil(t, tx.Bucket([]byte("half_done")), "a failed migration must roll back whole")
		return nil
	}))
}

// TestLongReadDoesNotStallWrites: a write that grows the file well past
// its size at open commits while a read transaction stays open (the
// catalog's background index rebuild holds one for its whole build); bbolt
// would otherwise wait for the read to end before remapping.
func TestLongReadDoesNotStallWrites(t *testing.T) {
	db, err := store.Open(filepath.Join(t.TempDir(), "accords.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	reading, release := make(chan struct{}), make(chan struct{})
	viewDone := make(chan error, 1)
	go func() {
		viewDone <- db.View(func(store.Tx) error {
			close(reading)
			<-release
			return nil
		})
	}()
	<-reading
	wrote := make(chan error, 1)
	go func() {
		big := make([]byte, 1<<20)
		for i := range 8 {
			if err := db.Update(func(tx store.Tx) error {
				return tx.Bucket(store.BucketMeta).Put(fmt.Appendf(nil, "big%d", i), big)
			}); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("writes waited for the open read transaction")
	}
	close(release)
	require.NoError(t, <-viewDone)
}
