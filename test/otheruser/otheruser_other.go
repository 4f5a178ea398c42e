//go:build !linux

// Package otheruser plays another local user in the control socket tests;
// it runs on Linux only.
package otheruser

// Main does nothing here.
func Main() {}

// Cleanup does nothing here.
func Cleanup() {}
