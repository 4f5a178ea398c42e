package resident

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// FileResident is the process's file-backed resident set in bytes (RssFile
// of /proc/self/status: a counter the kernel keeps, cheap to read).
func FileResident() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	return statusField(b, "RssFile:")
}

// statusField reads a "Name:  123 kB" line of /proc/self/status.
func statusField(status []byte, name string) (int64, error) {
	i := bytes.Index(status, []byte("\n"+name))
	if i < 0 {
		return 0, fmt.Errorf("/proc/self/status has no %s", name)
	}
	line := status[i+1+len(name):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := strings.Fields(string(line))
	if len(f) != 2 || f[1] != "kB" {
		return 0, fmt.Errorf("/proc/self/status: unexpected %s line %q", name, line)
	}
	kb, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, err
	}
	return kb << 10, nil
}

// release unmaps r's pages (they stay in the page cache).
func release(r Range) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.Addr, uintptr(r.Len), unix.MADV_DONTNEED); errno != 0 {
		return errno
	}
	return nil
}

// Executable is a Source of the executable's read-only mappings (code and
// read-only data) that hold no private copy of a page: those the loader
// relocated in place are left alone, since releasing a private copy would
// lose it. (A page of a file written moments ago is dirty in the page
// cache, not a copy: it is released like any other.) The mappings are
// found once, here; they never move.
func Executable() (Source, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return nil, err
	}
	ranges, err := cleanMappings(st.Ino)
	if err != nil {
		return nil, err
	}
	if len(ranges) == 0 {
		return nil, errors.New("no read-only mapping of the executable found")
	}
	return func(release func(Range)) error {
		for _, r := range ranges {
			release(r)
		}
		return nil
	}, nil
}

// cleanMappings lists, from /proc/self/smaps, the private read-only
// mappings of the file with inode ino without anonymous (copied) pages.
func cleanMappings(ino uint64) ([]Range, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Range
	var cur *Range
	clean := false
	flush := func() {
		if cur != nil && clean {
			out = append(out, *cur)
		}
		cur = nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) >= 5 && strings.Contains(fields[0], "-") && !strings.HasSuffix(fields[0], ":") {
			flush()
			lo, hi, ok := strings.Cut(fields[0], "-")
			start, err1 := strconv.ParseUint(lo, 16, 64)
			end, err2 := strconv.ParseUint(hi, 16, 64)
			inode, err3 := strconv.ParseUint(fields[4], 10, 64)
			if !ok || err1 != nil || err2 != nil || err3 != nil || inode != ino {
				continue
			}
			if perms := fields[1]; perms != "r-xp" && perms != "r--p" {
				continue
			}
			cur, clean = &Range{Addr: uintptr(start), Len: int(end - start)}, true
			continue
		}
		if cur == nil || len(fields) < 2 {
			continue
		}
		switch fields[0] {
		case "Anonymous:", "Swap:":
			if fields[1] != "0" {
				clean = false
			}
		}
	}
	flush()
	return out, sc.Err()
}
