package control_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/migrations"

	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func shortDir(t *testing.T) string {
	// Unix socket paths are limited to about 100 bytes.
	d, err := os.MkdirTemp("", "ctl")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestListenRefusesLiveSocketAndNonSocket(t *testing.T) {
	dir := shortDir(t)
	p := filepath.Join(dir, "a.sock")
	ln, err := control.Listen(p)
	require.NoError(t, err)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = control.Listen(p)
	assert.ErrorIs(t, err, control.ErrInUse, "a live daemon's socket is never taken over")
	ln.Close()
	_, err = os.Stat(p)
	assert.True(t, os.IsNotExist(err), "closing removes the socket")

	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("x"), 0o600))
	_, err = control.Listen(plain)
	assert.ErrorContains(t, err, "not a socket")
	b, _ := os.ReadFile(plain)
	assert.Equal(t, "x", string(b), "a regular file is left alone")
}

func TestStaleSocketIsReplaced(t *testing.T) {
	p := filepath.Join(shortDir(t), "s.sock")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
	require.NoError(t, err)
	ul.SetUnlinkOnClose(false)
	ul.Close()
	ln, err := control.Listen(p)
	require.NoError(t, err)
	ln.Close()
}

func TestBackupAndStatusOverTheSocket(t *testing.T) {
	dir := shortDir(t)
	db, err := store.Open(filepath.Join(dir, "a.db"), store.Options{})
	require.NoError(t, err)
	defer db.Close()
	ln, err := control.Listen(control.SocketPath(db.Path()))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := &control.Server{DB: db, Status: control.Status{PID: 42, Version: "test", Transport: "stdio"}}
	go func() { done <- srv.Serve(ctx, ln, time.Second) }()

	c := control.NewClient(control.SocketPath(db.Path()))
	defer c.Close()
	st, err := c.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 42, st.PID)
	assert.Equal(t, migrations.Latest(), st.SchemaVersion)

	var buf bytes.Buffer
	n, schema, err := c.Backup(context.Background(), &buf)
	require.NoError(t, err)
	assert.Equal(t, int64(buf.Len()), n)
	assert.Equal(t, migrations.Latest(), schema)
	p := filepath.Join(dir, "copy.db")
	require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o600))
	_, err = backup.Check(p)
	require.NoError(t, err)

	cancel()
	require.NoError(t, <-done)
	_, err = c.Status(context.Background())
	assert.Error(t, err)
}
