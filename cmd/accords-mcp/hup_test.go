package main

import (
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestOnHangupCallsReload(t *testing.T) {
	got := make(chan struct{}, 4)
	stop := onHangup(func() { got <- struct{}{} })
	defer stop()
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGHUP))
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not trigger a reload")
	}
}
