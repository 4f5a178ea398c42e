//go:build !linux && !darwin && !freebsd

package control

import (
	"errors"
	"net"
)

// Supported is false: with no peer credentials (Windows) the socket could
// not tell this user's launches from another's, so there is none; every
// process serves the database itself and the HTTP bridge shares it (D33).
const Supported = false

// peerUID cannot be read here, so every connection is refused: the socket
// never trusts a peer it cannot identify.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are not supported on this platform")
}
