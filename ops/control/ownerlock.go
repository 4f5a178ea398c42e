package control

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/accordsai/accords-mcp/platform/filelock"
	"github.com/accordsai/accords-mcp/platform/privdir"
)

// OwnerLockPath is the lock serialising who becomes dbPath's owner, so two
// racing launches end with one daemon.
func OwnerLockPath(dbPath string) string { return dbPath + ".owner.lock" }

// LockOwner takes the owner lock (released if the process dies),
// waiting until ctx ends.
func LockOwner(ctx context.Context, dbPath string) (unlock func(), err error) {
	// The database folder is created 0700, as the database would create it,
	// and must be private before anything is created in it (privdir).
	if err := privdir.Ensure(filepath.Dir(dbPath)); err != nil {
		if errors.Is(err, privdir.ErrUnsafe) {
			return nil, err
		}
		return nil, fmt.Errorf("create the database folder: %w", err)
	}
	f, err := os.OpenFile(OwnerLockPath(dbPath), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the owner lock: %w", err)
	}
	release, err := filelock.Lock(ctx, f, 10*time.Millisecond)
	switch {
	case errors.Is(err, filelock.ErrLocked):
		f.Close()
		return nil, fmt.Errorf("another launch holds the owner lock %s (starting a daemon?): %w", OwnerLockPath(dbPath), ctx.Err())
	case err != nil:
		f.Close()
		return nil, fmt.Errorf("take the owner lock %s: %w", OwnerLockPath(dbPath), err)
	}
	return func() {
		release()
		f.Close()
	}, nil
}
