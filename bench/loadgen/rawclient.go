package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	segjson "github.com/segmentio/encoding/json"
)

// RawProtocol is the protocol version RawClient negotiates: the
// session-based handshake most MCP clients speak today.
const RawProtocol = "2025-11-25"

// RawClient is the leanest MCP client over stdio there can be: it encodes a
// request before its clock starts, writes it as one line and reads lines
// until its answer's, and decodes the answer after the clock stops. Its
// figure is the server's answer time plus the pipe and nothing of a client
// SDK's own work (the go-sdk client's message handling and goroutine
// hand-offs were half of a cheap call's wire time), so it says what the
// server itself costs; the go-sdk session's figures say what such a
// client sees.
type RawClient struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
	next   int64
	exited chan error
}

// StartRawClient starts the server as StartServer would over stdio and
// performs the initialize handshake.
func StartRawClient(ctx context.Context, o ServerOptions) (*RawClient, error) {
	cmd := exec.Command(o.Bin, o.Args...)
	cmd.Env = ServerEnv(o.DBPath, append([]string{"ACCORDS_MCP_LOG_LEVEL=warn", "ACCORDS_MCP_STANDALONE=true"}, o.Env...))
	c := &RawClient{cmd: cmd, stderr: &tailBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = c.stderr
	var err error
	if c.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c.out = bufio.NewReaderSize(stdout, 256<<10)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { c.exited <- cmd.Wait() }()
	init := map[string]any{"protocolVersion": RawProtocol, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "accords-bench-raw", "version": "1"}}
	if _, _, err := c.roundTrip(ctx, "initialize", init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w\n%s", err, c.stderr.String())
	}
	if _, err := c.in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// rawAnswer is the part of a JSON-RPC answer RawClient reads.
type rawAnswer struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// roundTrip sends one request and returns the time from writing its line
// to reading its answer's, and the answer's result.
func (c *RawClient) roundTrip(ctx context.Context, method string, params any) (time.Duration, json.RawMessage, error) {
	c.next++
	id := c.next
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return 0, nil, err
	}
	line = append(line, '\n')
	t0 := time.Now()
	if _, err := c.in.Write(line); err != nil {
		return 0, nil, err
	}
	for ctx.Err() == nil {
		got, err := c.out.ReadBytes('\n')
		if err != nil {
			return 0, nil, err
		}
		d := time.Since(t0)
		var a rawAnswer
		if err := json.Unmarshal(got, &a); err != nil {
			return 0, nil, fmt.Errorf("answer is not JSON: %w", err)
		}
		if a.ID == nil || *a.ID != id || a.Method != "" {
			// A notification, or a request of the server's: not ours.
			continue
		}
		if a.Error != nil {
			return d, nil, fmt.Errorf("%s: %s", method, a.Error.Message)
		}
		return d, a.Result, nil
	}
	return 0, nil, ctx.Err()
}

// Do makes one call of op and returns its time and outcome code, read as
// Call (envelopes) or CallRaw (any MCP server) reads it.
func (c *RawClient) Do(ctx context.Context, op Op, args map[string]any, envelopes bool) (time.Duration, string) {
	if op.Name == OpToolsList {
		d, _, err := c.roundTrip(ctx, "tools/list", map[string]any{})
		if err != nil {
			return d, CodeTransport
		}
		return d, ""
	}
	if args == nil {
		args = map[string]any{}
	}
	d, result, err := c.roundTrip(ctx, "tools/call", map[string]any{"name": op.Tool, "arguments": args})
	if err != nil {
		return d, CodeTransport
	}
	return d, outcome(result, envelopes)
}

// outcome reads a tools/call result as Call (envelopes) or CallRaw (any
// MCP server) reads it: "" for success, else the envelope's error code.
func outcome(result json.RawMessage, envelopes bool) string {
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent any  `json:"structuredContent"`
	}
	if err := decodeExact(result, &res); err != nil {
		return CodeTransport
	}
	if !envelopes {
		if res.IsError {
			return "is_error"
		}
		return ""
	}
	env, ok := envelopeOf(res.StructuredContent)
	switch {
	case !ok || (!env.OK && env.Error == nil):
		return CodeNoEnvelope
	case env.OK:
		return ""
	default:
		return env.Error.Code
	}
}

// decodeExact decodes data into v matching keys exactly, as the go-sdk
// client does (encoding/json also takes a key spelled in another case).
func decodeExact(data []byte, v any) error {
	rest, err := segjson.Parse(data, v, segjson.DontMatchCaseInsensitiveStructFields)
	if err == nil && len(bytes.TrimSpace(rest)) > 0 {
		return fmt.Errorf("bytes after the JSON value")
	}
	return err
}

// Close closes the server's stdin and waits for it to exit (SIGKILL after
// 10 s).
func (c *RawClient) Close() error {
	_ = c.in.Close()
	select {
	case err := <-c.exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return err
		}
		if err != nil {
			return fmt.Errorf("server exit: %w\n%s", err, lastLines(c.stderr.String(), 5))
		}
		return nil
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		return fmt.Errorf("server did not exit within 10 s of its stdin closing; killed\n%s", lastLines(c.stderr.String(), 5))
	}
}

func lastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
