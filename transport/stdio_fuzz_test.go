package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzStdioFraming feeds arbitrary bytes, followed by a valid ping request,
// to the stdio transport and answers every call it delivers. Properties: no
// panic and no hang; the session ends with EOF, not an error; every output
// message is valid JSON; and, when the garbage holds no Content-Length
// header that could legitimately swallow it, the ping that follows garbage
// is still delivered (a malformed message never kills the session).
func FuzzStdioFraming(f *testing.F) {
	for _, s := range []string{
		"",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n",
		"not json\n",
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"x\"\n",
		"Content-Length: 47\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}",
		"Content-Length: abc\r\n\r\n",
		"Content-Length: -1\r\n\r\n",
		"\n\n\r\n   \n",
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
		"[1,2,3]\n{}\n\"str\"\n",
		"{\"id\":{\"a\":1},\"jsonrpc\":\"2.0\",\"method\":\"m\"}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, garbage []byte) {
		if len(garbage) > 1<<16 {
			return
		}
		const sentinel = `{"jsonrpc":"2.0","id":"fuzz-sentinel","method":"ping"}`
		input := append(append(append([]byte(nil), garbage...), '\n'), sentinel+"\n"...)
		out := &syncbuf.Buffer{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := (&StdioTransport{In: bytes.NewReader(input), Out: out}).Connect(ctx)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer conn.Close()
		sawSentinel := false
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("transport hung on %q", garbage)
				}
				if !errors.Is(err, io.EOF) {
					// A framed body cut short by end of input is the one
					// legitimate non-EOF ending.
					if !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Fatalf("session ended with %v on %q", err, garbage)
					}
				}
				break
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok {
				continue
			}
			if req.ID.Raw() == "fuzz-sentinel" {
				sawSentinel = true
			}
			if req.IsCall() {
				resp := &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)}
				if err := conn.Write(ctx, resp); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
		}
		if !strings.Contains(strings.ToLower(string(garbage)), "content-length") && !sawSentinel {
			t.Fatalf("a valid request after %q was not delivered", garbage)
		}
		for _, m := range splitOutput(t, out.String()) {
			if !json.Valid([]byte(m)) {
				t.Fatalf("invalid JSON on output: %q (output %q)", m, out.String())
			}
		}
	})
}

// splitOutput parses the transport's output as a client would: a
// Content-Length header introduces a framed body of exactly that length,
// anything else is one message per line.
func splitOutput(t *testing.T, s string) []string {
	var msgs []string
	for len(s) > 0 {
		if strings.HasPrefix(s, "Content-Length: ") {
			head, rest, ok := strings.Cut(s, "\r\n\r\n")
			if !ok {
				t.Fatalf("framed reply without header end: %q", s)
			}
			n, err := strconv.Atoi(strings.TrimPrefix(head, "Content-Length: "))
			if err != nil || n > len(rest) {
				t.Fatalf("bad framed reply header %q", head)
			}
			msgs = append(msgs, rest[:n])
			s = rest[n:]
			continue
		}
		line, rest, _ := strings.Cut(s, "\n")
		if strings.TrimSpace(line) != "" {
			msgs = append(msgs, line)
		}
		s = rest
	}
	return msgs
}
