//go:build amd64 || arm64

package transport

// growStack makes the runtime enlarge the calling goroutine's stack to
// hold stackHeadroom more bytes: its frame is that size, so its prologue
// finds the stack too small and grows it (to the next power of two that
// fits) before it returns at once; the stack keeps that size. The frame is
// declared in assembly because a Go frame that size would be zeroed on
// every call (5 % of a cheap call's CPU).
func growStack()
