//go:build unix

package privdir

import (
	"io/fs"
	"syscall"
)

// Owner is the uid owning the file fi describes.
func Owner(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, false
	}
	return int(st.Uid), true
}
