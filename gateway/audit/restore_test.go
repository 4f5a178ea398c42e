package audit

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// restoreFixture is a database whose log is anchored to a file, a copy of
// it taken after `backupAt` receipts, and the database grown to `total`
// after the copy.
type restoreFixture struct {
	dir, dbPath, backupPath string
	anchor                  *FileAnchor
}

func newRestoreFixture(t *testing.T, backupAt, total int) *restoreFixture {
	t.Helper()
	dir := t.TempDir()
	f := &restoreFixture{dir: dir, dbPath: filepath.Join(dir, "a.db"), backupPath: filepath.Join(dir, "backup.db"),
		anchor: &FileAnchor{Path: filepath.Join(dir, "anchor.log")}}
	write := func(from, to int) {
		db, err := store.Open(f.dbPath, store.Options{})
		require.NoError(t, err)
		l := open(t, db, Options{Anchor: f.anchor, Cadence: Cadence{Every: 4}})
		for i := from; i <= to; i++ {
			_, err := l.AppendSync(receipt(i, "default", time.Now()))
			require.NoError(t, err)
		}
		require.NoError(t, l.Close())
		require.NoError(t, db.Close())
	}
	write(1, backupAt)
	raw, err := os.ReadFile(f.dbPath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f.backupPath, raw, 0o600))
	write(backupAt+1, total)
	return f
}

func (f *restoreFixture) open(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	return db
}

// swap puts the backup in place of the database, as a restore's rename
// does.
func (f *restoreFixture) swap(t *testing.T) {
	t.Helper()
	require.NoError(t, os.Rename(f.backupPath, f.dbPath))
}

func (f *restoreFixture) anchored(t *testing.T) [][]byte {
	t.Helper()
	notes, err := f.anchor.Tail()
	require.NoError(t, err)
	return notes
}

// The attack of issue 37: an older copy put in place silently drops the
// newer receipts and reuses their numbers. A server with a readable anchor
// now flags it at start, as it flags a damaged log.
func TestStartFlagsALogThatDoesNotExtendItsAnchor(t *testing.T) {
	f := newRestoreFixture(t, 10, 20)
	f.swap(t) // no restore record: a rollback
	db := f.open(t, f.dbPath)
	defer db.Close()
	l := open(t, db, Options{Anchor: f.anchor, CheckAnchor: true})
	p := integrity(t, l)
	require.NotNil(t, p, "a log behind its anchor is flagged at start")
	assert.Equal(t, ProblemRolledBack, p.Kind)
	assert.Contains(t, p.Message, "covers 20 receipts but the log ends at receipt 10")
	require.NoError(t, l.Close())

	// The flag is stored: a restart still has it.
	l = open(t, db, Options{Anchor: f.anchor, CheckAnchor: true})
	require.NotNil(t, integrity(t, l))
	require.NoError(t, l.Close())
}

func TestStartChecksTheAnchorOnlyWhenAsked(t *testing.T) {
	f := newRestoreFixture(t, 10, 20)
	db := f.open(t, f.dbPath)
	defer db.Close()
	l := open(t, db, Options{Anchor: f.anchor, CheckAnchor: true})
	assert.Nil(t, integrity(t, l), "the log extends its anchor")
	require.NoError(t, l.Close())
	f.swap(t)
	require.NoError(t, db.Close())
	db = f.open(t, f.dbPath)
	l = open(t, db, Options{Anchor: f.anchor})
	assert.Nil(t, integrity(t, l), "tools that open the log for a moment do not check")
	require.NoError(t, l.Close())
}

func TestRestoreIsRecordedAndAccountsForTheReplacedHistory(t *testing.T) {
	for _, anchored := range []bool{true, false} {
		name := "record anchored"
		if !anchored {
			name = "record not anchored"
		}
		t.Run(name, func(t *testing.T) {
			f := newRestoreFixture(t, 10, 23)
			prev := f.open(t, f.dbPath)
			backup := f.open(t, f.backupPath)
			d, err := CompareForRestore(prev, backup, "backup.db")
			require.NoError(t, err)
			require.NoError(t, prev.Close())
			require.NoError(t, backup.Close())
			assert.EqualValues(t, 23, d.PreviousSize)
			assert.EqualValues(t, 10, d.RestoredSize)
			assert.EqualValues(t, 10, d.Common)
			assert.EqualValues(t, 13, d.Discarded, "the receipts the restore drops are counted")
			assert.Equal(t, d.PreviousLog, d.RestoredLog)
			assert.Contains(t, d.Summary(), "13 receipts the replaced log held after receipt 10 (up to 23) are discarded")

			f.swap(t)
			db := f.open(t, f.dbPath)
			defer db.Close()
			opts := Options{}
			if anchored {
				opts.Anchor = f.anchor
			}
			opts.Key = testKey(t)
			ref, err := RecordRestoreIn(db, opts, d, "operator:test")
			require.NoError(t, err)
			assert.EqualValues(t, 11, ref.Seq, "the record is the restored log's next receipt")
			rs, err := List(db, Filter{Limit: 1})
			require.NoError(t, err)
			assert.Equal(t, TypeRestore, rs[0].Type)
			assert.Contains(t, rs[0].Note, "13 receipts")

			// A server starting on it with the anchor finds nothing wrong.
			l := open(t, db, Options{Anchor: f.anchor, CheckAnchor: true})
			assert.Nil(t, integrity(t, l))
			for i := 1; i <= 20; i++ {
				_, err := l.AppendSync(receipt(100+i, "default", time.Now()))
				require.NoError(t, err)
			}
			require.NoError(t, l.Close())

			// The anchor now holds both histories at the sizes 11..23;
			// verification takes the replaced ones for what they are.
			rep := verifyDB(t, db, f.anchored(t)...)
			require.True(t, rep.OK, "%+v", rep.Problem)
			require.Len(t, rep.Restores, 1)
			assert.Contains(t, rep.Restores[0].Note, "13 receipts")
			statuses := map[string]int{}
			for _, s := range rep.Saved {
				statuses[s.Status]++
			}
			assert.Positive(t, statuses[SavedReplaced])
			assert.Positive(t, statuses["consistent"])
		})
	}
}

func TestRestoreRecordCannotBeForged(t *testing.T) {
	f := newRestoreFixture(t, 10, 20)
	prev := f.open(t, f.dbPath)
	backup := f.open(t, f.backupPath)
	d, err := CompareForRestore(prev, backup, "backup.db")
	require.NoError(t, err)
	require.NoError(t, prev.Close())
	require.NoError(t, backup.Close())
	f.swap(t)
	db := f.open(t, f.dbPath)
	defer db.Close()
	other, err := NewKey(append(make([]byte, KeySize-1), 1), "other")
	require.NoError(t, err)
	// Signed with another key: it accounts for nothing.
	_, err = RecordRestoreIn(db, Options{Key: other}, d, "intruder")
	require.NoError(t, err)
	l := open(t, db, Options{Anchor: f.anchor, CheckAnchor: true})
	p := integrity(t, l)
	require.NotNil(t, p)
	require.NoError(t, l.Close())
	rep := verifyDB(t, db)
	require.False(t, rep.OK)
	assert.Equal(t, ProblemForged, rep.Problem.Kind)
}

func TestCompareForRestoreOfAnotherLog(t *testing.T) {
	a := newRestoreFixture(t, 3, 5)
	b := newRestoreFixture(t, 2, 4)
	prev := a.open(t, a.dbPath)
	defer prev.Close()
	other := b.open(t, b.dbPath)
	defer other.Close()
	d, err := CompareForRestore(prev, other, "other.db")
	require.NoError(t, err)
	assert.NotEqual(t, d.PreviousLog, d.RestoredLog)
	assert.Zero(t, d.Common)
	assert.EqualValues(t, 5, d.Discarded)
	none, err := CompareForRestore(nil, other, "other.db")
	require.NoError(t, err)
	assert.Zero(t, none.Discarded)
	assert.Contains(t, none.Summary(), "held no audit log")
}
