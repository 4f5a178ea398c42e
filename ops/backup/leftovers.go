package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// Temporary files of backup, restore and the index removal of restore;
// older names lack the process id.
var (
	leftoverRe       = regexp.MustCompile(`^\..+\.(tmp|restore)-(?:(\d+)-)?[0-9a-f]{12}$`)
	leftoverAsideRe  = regexp.MustCompile(`^.+\.removing-(?:(\d+)-)?\d+$`)
	legacyLeftoverAt = time.Hour
)

// Leftover is a temporary file or folder a killed backup or restore left.
type Leftover struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// PID is the process that made it (0 when the name does not say).
	PID int `json:"pid,omitempty"`
}

// Leftovers lists temporary files in dir whose process is gone (or, without
// a process id, older than an hour); it changes nothing.
func Leftovers(dir string) ([]Leftover, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Leftover
	for _, e := range entries {
		name := e.Name()
		var pidText string
		switch {
		case !e.IsDir() && leftoverRe.MatchString(name):
			pidText = leftoverRe.FindStringSubmatch(name)[2]
		case e.IsDir() && leftoverAsideRe.MatchString(name):
			pidText = leftoverAsideRe.FindStringSubmatch(name)[1]
		default:
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		pid, _ := strconv.Atoi(pidText)
		if pid > 0 && processAlive(pid) {
			continue
		}
		if pid == 0 && time.Since(info.ModTime()) < legacyLeftoverAt {
			continue
		}
		out = append(out, Leftover{Path: filepath.Join(dir, name), Size: sizeOf(filepath.Join(dir, name), info), PID: pid})
	}
	return out, nil
}

// CleanStale removes what Leftovers lists and returns it. The server calls
// it at start for the database folder, backup for the folder it writes to.
func CleanStale(dir string) ([]Leftover, error) {
	list, err := Leftovers(dir)
	if err != nil {
		return nil, err
	}
	var removed []Leftover
	var errs []error
	for _, l := range list {
		if err := os.RemoveAll(l.Path); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", l.Path, err))
			continue
		}
		removed = append(removed, l)
	}
	return removed, errors.Join(errs...)
}

func sizeOf(path string, info fs.FileInfo) int64 {
	if !info.IsDir() {
		return info.Size()
	}
	var n int64
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
