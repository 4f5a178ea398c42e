//go:build !amd64 && !arm64

package transport

// stackHeadroom is the frame growStack declares, as in the assembly.
const stackHeadroom = 32 << 10

// growStack makes the runtime enlarge the calling goroutine's stack to
// hold stackHeadroom more bytes: a frame that size does not fit, so the
// stack is grown (to the next power of two that fits it) before the call
// starts, and keeps that size when the frame returns. The assembly
// versions declare the frame without zeroing it; this one zeroes pad.
//
//go:noinline
func growStack() {
	var pad [stackHeadroom]byte
	keep(&pad)
}

// keep stops the compiler from dropping pad.
//
//go:noinline
func keep(*[stackHeadroom]byte) {}
