//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// peakRSSMiB is an exited process's peak resident set (ru_maxrss: KiB on
// Linux, bytes on macOS).
func peakRSSMiB(ps *os.ProcessState) float64 {
	kib := float64(ps.SysUsage().(*syscall.Rusage).Maxrss)
	if runtime.GOOS == "darwin" {
		kib /= 1024
	}
	return kib / 1024
}
