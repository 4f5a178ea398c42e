package transport_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trickleBody sends the head of a request announcing a body of 200,000
// bytes (under the body limit, and under the 256 KiB net/http reads after
// a handler to reuse a connection), then sends one byte of it every 20 ms
// until stop is closed or the connection breaks.
func trickleBody(t *testing.T, c net.Conn, method, path string, stop <-chan struct{}) {
	t.Helper()
	_, err := fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: 200000\r\n\r\n{",
		method, path, c.RemoteAddr())
	require.NoError(t, err)
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
}

// requireClosed reads from br until the server closes the connection,
// failing if it is still open after the hang guard. A close while the
// client still sends may arrive as a reset instead of EOF; both are a
// closed connection.
func requireClosed(t *testing.T, c net.Conn, br *bufio.Reader) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server kept the connection of a trickled body open")
	}
}

// TestTrickledBodyClosesTheConnection: a client that kept trickling its
// body got 408 after the body timeout, but the connection stayed open
// while net/http read the rest of the body without a deadline; a body no
// handler reads (a refusal, a health check) was waited for without even
// an answer. Each now ends within the body timeout with the connection
// closed.
func TestTrickledBodyClosesTheConnection(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(transport.NewHTTPHandler(transport.HTTPOptions{BodyTimeout: 200 * time.Millisecond}))
	defer srv.Close()

	for _, tc := range []struct {
		name, method, path string
		status             int
	}{
		{"MCP endpoint", http.MethodPost, "/v1/mcp", http.StatusRequestTimeout},
		{"body nobody reads", http.MethodPost, "/healthz", http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", srv.Listener.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			stop := make(chan struct{})
			defer close(stop)
			trickleBody(t, c, tc.method, tc.path, stop)

			br := bufio.NewReader(c)
			require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.True(t, resp.Close, "the answer says the connection closes")
			requireClosed(t, c, br)
		})
	}
}
