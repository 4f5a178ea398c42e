package approvaltest

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/ops/control"
	"github.com/accordsai/accords-mcp/transport/frontend"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// Daemon makes the app the owner of its database, as `accords-mcp daemon`
// runs it, so stdio launches can attach to it (Attach). It stops when the
// test ends; Restart restarts it. The database path must be short: the
// socket beside it is limited to about 100 bytes.
func (e *Env) Daemon() {
	e.t.Helper()
	if e.owner != nil {
		return
	}
	e.own()
	e.t.Cleanup(func() {
		if e.owner != nil {
			e.owner.Close(time.Second)
		}
	})
}

func (e *Env) own() {
	w, err := e.App.Own(app.OwnerOptions{Mode: control.ModeExplicit, Transport: "attach"})
	require.NoError(e.t, err)
	e.owner = w
}

// LaunchEnv is the environment session of a launch pointing at the
// simulator with token.
func (e *Env) LaunchEnv(token string) session.Defaults {
	return session.Defaults{BaseURL: e.Sim.URL, Token: token, TimeoutMS: 5000}
}

// FrontEnd runs the front end of one stdio launch with env (its VC_*
// variables), attached to the daemon (see Daemon), as `accords-mcp serve`
// runs it. The client reads clientIn and writes clientOut; done is closed
// when the front end has returned, with its error in *errp. The test's end
// closes clientOut and waits for the front end.
func (e *Env) FrontEnd(t testing.TB, env session.Defaults) (clientIn io.Reader, clientOut io.WriteCloser, done <-chan struct{}, errp *error) {
	t.Helper()
	frontIn, cOut := io.Pipe()
	cIn, frontOut := io.Pipe()
	hello := control.Hello{Protocol: control.Protocol, PID: os.Getpid(), Env: env}
	dial := func(ctx context.Context) (io.ReadWriteCloser, error) {
		c := control.NewClient(control.SocketPath(e.Cfg.DBPath))
		defer c.Close()
		conn, _, err := c.Attach(ctx, hello)
		return conn, err
	}
	ch := make(chan struct{})
	var runErr error
	go func() {
		defer close(ch)
		runErr = frontend.Run(context.Background(), frontend.Options{In: frontIn, Out: frontOut, Dial: dial})
		_ = frontOut.Close()
	}()
	t.Cleanup(func() {
		_ = cOut.Close()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Error("the front end did not end with its input")
		}
	})
	return cIn, cOut, ch, &runErr
}

// Attach connects c at version through a front end with env.
func (e *Env) Attach(t testing.TB, env session.Defaults, c *mcp.Client, version string) *Client {
	t.Helper()
	e.Daemon()
	in, out, _, _ := e.FrontEnd(t, env)
	return ConnectTransport(t, c, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: out}, version)
}
