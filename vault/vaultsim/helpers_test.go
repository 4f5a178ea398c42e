package vaultsim_test

import (
	"context"
	"net"
)

type net_Conn = net.Conn

func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}
