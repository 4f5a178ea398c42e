//go:build !reliability

package reliability

// heavy selects the full reliability runs (-tags=reliability).
const heavy = false
