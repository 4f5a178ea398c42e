//go:build !linux

package resident

import "errors"

var errUnsupported = errors.New("the resident set is not governed on this operating system")

// FileResident is unknown here: Run returns at once.
func FileResident() (int64, error) { return 0, errUnsupported }

func release(Range) error { return errUnsupported }

// Executable is not available here.
func Executable() (Source, error) { return nil, errUnsupported }
