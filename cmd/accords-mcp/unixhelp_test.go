package main

import (
	"context"
	"net"
)

type netConn = net.Conn

func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

// listenUnixNoUnlink binds a socket whose file survives Close, as after a
// crash.
func listenUnixNoUnlink(path string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	return ln, nil
}
