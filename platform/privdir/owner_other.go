//go:build !unix

package privdir

import "io/fs"

// Owner is unknown here: files have no uid.
func Owner(fs.FileInfo) (int, bool) { return -1, false }
