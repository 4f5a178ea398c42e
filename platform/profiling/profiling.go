// Package profiling serves pprof on an opt-in loopback listener
// (ACCORDS_MCP_PPROF).
package profiling

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"
)

// CheckAddr accepts host:port with a localhost or loopback host: profiles
// show memory contents.
func CheckAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port must be a number 0-65535", addr)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("%q: the profiling listener is loopback only (127.0.0.1, [::1] or localhost)", addr)
	}
	return nil
}

// Handler serves the pprof index, profiles, symbol lookup and traces
// under /debug/pprof/.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Server is a running profiling listener.
type Server struct {
	srv  *http.Server
	addr net.Addr
	done chan struct{}
}

// Addr is the address it listens on (the port chosen for port 0).
func (s *Server) Addr() net.Addr { return s.addr }

// Start serves Handler wrapped in guard on addr (loopback only) until
// Close; guard must refuse DNS-rebound and cross-origin requests.
func Start(addr string, guard func(http.Handler) http.Handler, logger *slog.Logger) (*Server, error) {
	if guard == nil {
		return nil, errors.New("profiling listener: no guard against web pages")
	}
	if err := CheckAddr(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("profiling listener: %w", err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		_ = ln.Close()
		return nil, fmt.Errorf("profiling listener: %s is not a loopback address", ln.Addr())
	}
	s := &Server{
		srv:  &http.Server{Handler: guard(Handler()), ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && logger != nil {
			logger.Error("profiling listener stopped", "error", err.Error())
		}
	}()
	if logger != nil {
		logger.Warn("pprof profiling listener is on (ACCORDS_MCP_PPROF)", "addr", s.addr.String())
	}
	return s, nil
}

// Close stops the listener, ending profiles in progress.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	<-s.done
	return err
}
