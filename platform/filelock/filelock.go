// Package filelock takes the exclusive lock bbolt takes on its database
// file (flock(2) on unix; on Windows LockFileEx over the file's last
// possible byte, the range bbolt locks), so a lock taken here conflicts with
// an open database. The system releases it when the process dies.
package filelock

import (
	"context"
	"errors"
	"os"
	"time"
)

// Open opens an existing file read-only for Lock. A rename may replace the
// file while it is open, as unix allows (Windows otherwise refuses it).
func Open(path string) (*os.File, error) { return open(path) }

// ErrLocked means another open file holds the lock.
var ErrLocked = errors.New("the file is locked by another process")

// Lock takes the lock on f, retrying every interval while another holds it,
// until ctx ends (then ErrLocked wrapped with ctx's error). Any other
// failure is returned at once. release frees the lock; it does not close f.
func Lock(ctx context.Context, f *os.File, interval time.Duration) (release func(), err error) {
	for {
		err := tryLock(f)
		if err == nil {
			return func() { _ = unlock(f) }, nil
		}
		if !errors.Is(err, ErrLocked) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(ErrLocked, ctx.Err())
		case <-time.After(interval):
		}
	}
}
