//go:build linux

package control

import (
	"net"

	"golang.org/x/sys/unix"
)

// Supported: the control socket can tell who connects, so it is used.
const Supported = true

// peerUID is the uid of the process at the other end of c (SO_PEERCRED:
// the credentials it had when it connected).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var serr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if serr == nil {
			uid = int(cred.Uid)
		}
	}); err != nil {
		return -1, err
	}
	return uid, serr
}
