package transport

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Unanswered counts the calls read and not yet answered, listens aside: a
// stopping daemon waits on it so that answers of calls that returned are
// not dropped.
func TestAttachUnansweredCountsCallsNotListens(t *testing.T) {
	t.Parallel()
	srv, cli := net.Pipe()
	defer cli.Close()
	at := &AttachTransport{Conn: srv, Session: "c-test"}
	conn, err := at.Connect(context.Background())
	require.NoError(t, err)
	defer conn.Close()
	go func() {
		_, _ = io.WriteString(cli, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`+"\n"+
			`{"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	}()
	go func() { _, _ = io.Copy(io.Discard, cli) }()
	for range 3 {
		_, err := conn.Read(context.Background())
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), at.Unanswered(), "the call, not the listen or the notification")

	id1, _ := jsonrpc.MakeID(float64(1))
	idL, _ := jsonrpc.MakeID("l")
	require.NoError(t, conn.Write(context.Background(), &jsonrpc.Response{ID: idL, Result: []byte(`{}`)}))
	assert.Equal(t, int64(1), at.Unanswered(), "a listen's answer answers no call")
	require.NoError(t, conn.Write(context.Background(), &jsonrpc.Response{ID: id1, Result: []byte(`{}`)}))
	assert.Equal(t, int64(0), at.Unanswered())
}
