package backup

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLeftoversTellDeadFromLive(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	pid := strconv.Itoa(dead.Process.Pid)
	mk := func(name string, age time.Duration) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
		require.NoError(t, os.Chtimes(p, time.Now().Add(-age), time.Now().Add(-age)))
		return p
	}
	gone := []string{
		mk(".accords.db.restore-"+pid+"-0123456789ab", 0),
		mk(".out.db.tmp-"+pid+"-abcdefabcdef", 0),
		mk(".accords.db.restore-0123456789ab", 2*time.Hour), // an older name, old
	}
	aside := filepath.Join(dir, "accords.db.index.removing-"+pid+"-12345")
	require.NoError(t, os.MkdirAll(filepath.Join(aside, "store"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(aside, "store", "seg"), make([]byte, 100), 0o600))
	gone = append(gone, aside)
	kept := []string{
		mk(".accords.db.restore-"+strconv.Itoa(os.Getpid())+"-0123456789ab", 0), // in use
		mk(".accords.db.restore-fedcba987654", 0),                               // older name, recent
		mk("accords.db", 0),
		mk("accords.db.20261130T010203.000Z.bak", 0),
	}
	list, err := Leftovers(dir)
	require.NoError(t, err)
	var paths []string
	for _, l := range list {
		paths = append(paths, l.Path)
	}
	assert.ElementsMatch(t, gone, paths)
	removed, err := CleanStale(dir)
	require.NoError(t, err)
	assert.Len(t, removed, len(gone))
	for _, p := range gone {
		_, err := os.Stat(p)
		assert.True(t, os.IsNotExist(err), p)
	}
	for _, p := range kept {
		_, err := os.Stat(p)
		assert.NoError(t, err, p)
	}
}
