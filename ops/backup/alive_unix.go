//go:build unix

package backup

import (
	"errors"
	"os"
	"syscall"
)

// processAlive reports whether pid names a running process (signal 0
// checks without sending anything; EPERM means it exists).
func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
