// Package etcdtest starts an embedded single-member etcd on loopback for
// tests of the etcd backend.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Server is a running embedded etcd.
type Server struct {
	e        *embed.Etcd
	cfg      *embed.Config
	Endpoint string
}

// Start runs etcd in a temporary folder until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{cfg: config(t, t.TempDir())}
	s.Endpoint = s.cfg.ListenClientUrls[0].Host
	s.start(t)
	t.Cleanup(s.Stop)
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func config(t testing.TB, dir string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.LogLevel = "error"
	// Tests run on a shared, loaded machine: no fsync stalls of seconds
	// should make the member lose its own leadership.
	cfg.UnsafeNoFsync = true
	return cfg
}

func (s *Server) start(t testing.TB) {
	t.Helper()
	e, err := embed.StartEtcd(s.cfg)
	if err != nil {
		t.Fatalf("start embedded etcd: %v", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		t.Fatal("embedded etcd did not become ready in 60s")
	}
	s.e = e
}

// Stop stops the server (its data stays for Restart).
func (s *Server) Stop() {
	if s.e != nil {
		s.e.Close()
		s.e = nil
	}
}

// Restart starts the server again on the same data and addresses.
func (s *Server) Restart(t testing.TB) {
	s.Stop()
	s.start(t)
}

// Compact compacts the keyspace up to rev.
func (s *Server) Etcd() *embed.Etcd { return s.e }
