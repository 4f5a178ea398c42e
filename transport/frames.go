package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// StdioFrames reads and writes whole messages on a client's stdin and
// stdout with StdioTransport's framing (newline-delimited JSON, or
// Content-Length framed; answers go out in the framing of the last input;
// a malformed frame gets a -32700 reply and reading goes on), without
// decoding them: the stdio front end forwards the bytes it reads. A
// message over the limit gets the same refusal as from the standalone
// server.
type StdioFrames struct{ c *stdioConn }

// NewStdioFrames reads frames of at most limit bytes
// (DefaultMaxMessageBytes when <= 0) from in and writes them to out.
func NewStdioFrames(in io.Reader, out io.Writer, limit int) *StdioFrames {
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	return &StdioFrames{c: &stdioConn{in: bufio.NewReaderSize(in, 64<<10), out: out, limit: limit}}
}

// Next returns the body of the next message (blank lines skipped), or
// io.EOF at the end of input.
func (f *StdioFrames) Next() ([]byte, error) {
	for {
		body, framed, err := f.c.next()
		if err != nil {
			if tl, ok := errors.AsType[*tooLongError](err); ok {
				f.c.replyError(tl.id, -32600, fmt.Sprintf("invalid request: message exceeds the %d-byte limit", f.c.limit))
				continue
			}
			if errors.Is(err, errBadHeader) {
				f.c.replyError(nil, -32700, "parse error")
				continue
			}
			return nil, err
		}
		f.c.framed.Store(framed)
		return body, nil
	}
}

// Write sends one message body. Safe for concurrent use.
func (f *StdioFrames) Write(body []byte) error { return f.c.writeRaw(body) }

// ReplyError sends a JSON-RPC error for id (nil for none).
func (f *StdioFrames) ReplyError(id any, code int, message string) { f.c.replyError(id, code, message) }

// RawID extracts the id of a JSON object that is not a valid message, so
// an error reply can still be correlated (nil when it has none).
func RawID(body []byte) any { return rawID(body) }
