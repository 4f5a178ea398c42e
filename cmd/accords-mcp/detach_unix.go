//go:build unix

package main

import "syscall"

// detached starts a daemon in a session of its own, so the terminal's or
// the client's hang-up does not reach it.
func detached() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }
