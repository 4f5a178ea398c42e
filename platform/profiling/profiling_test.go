package profiling

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckAddrIsLoopbackOnly(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:6060", "127.0.0.2:0", "[::1]:6060", "localhost:6060"} {
		require.NoError(t, CheckAddr(ok), ok)
	}
	for _, bad := range []string{"0.0.0.0:6060", ":6060", "10.0.0.1:6060", "[::]:6060", "example.com:6060", "127.0.0.1", "127.0.0.1:http", "127.0.0.1:70000", ""} {
		require.Error(t, CheckAddr(bad), bad)
	}
}

func TestStartServesProfilesAndCloses(t *testing.T) {
	open := func(h http.Handler) http.Handler { return h }
	_, err := Start("0.0.0.0:0", open, nil)
	require.ErrorContains(t, err, "loopback only")
	_, err = Start("127.0.0.1:0", nil, nil)
	require.ErrorContains(t, err, "no guard")

	s, err := Start("127.0.0.1:0", open, nil)
	require.NoError(t, err)
	resp, err := http.Get("http://" + s.Addr().String() + "/debug/pprof/heap?debug=1")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.Contains(string(body), "heap profile"), "a heap profile in text form")
	require.NoError(t, s.Close())
	_, err = http.Get("http://" + s.Addr().String() + "/debug/pprof/")
	require.Error(t, err, "closed")
}
