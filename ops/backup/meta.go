package backup

import (
	"fmt"
	"os"

	"github.com/accordsai/accords-mcp/store/boltfile"
)

// preflight validates the meta pages and walks the page tree with plain
// reads before bbolt maps the file: a page past the end of a truncated file
// is a fatal SIGBUS no recover catches.
func preflight(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	m, err := boltfile.Check(f, fi.Size())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return walkTree(path, m)
}
