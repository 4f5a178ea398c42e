//go:build windows

package main

import "syscall"

// detached is never used here: without the control socket a stdio launch
// serves on its own and starts no daemon (D33).
func detached() *syscall.SysProcAttr { return nil }
