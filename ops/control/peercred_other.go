//go:build !linux && !darwin && !freebsd

package control

import (
	"errors"
	"net"
)

// peerUID cannot be read here, so every connection is refused: the socket
// never trusts a peer it cannot identify.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are not supported on this platform")
}
