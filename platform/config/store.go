package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// EtcdStore is ACCORDS_MCP_STORE=etcd://… with its ACCORDS_MCP_ETCD_*
// settings.
type EtcdStore struct {
	Endpoints []string
	TLS       bool
	Prefix    string
	CertFile  string
	KeyFile   string
	CAFile    string
	Timeout   time.Duration
}

// DefaultEtcdPrefix is the key prefix when ACCORDS_MCP_ETCD_PREFIX is unset.
const DefaultEtcdPrefix = "/accords-mcp/"

// DefaultEtcdTimeout bounds one etcd request.
const DefaultEtcdTimeout = 5 * time.Second

func (c *Config) readStore(get func(string) string) error {
	spec := get("ACCORDS_MCP_STORE")
	if spec == "" || spec == "bbolt" {
		return nil
	}
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok || (scheme != "etcd" && scheme != "etcds") {
		return fmt.Errorf("ACCORDS_MCP_STORE must be etcd://host:port[,host:port…] (or etcds:// for TLS), got %q", spec)
	}
	st := &EtcdStore{TLS: scheme == "etcds", Prefix: DefaultEtcdPrefix, Timeout: DefaultEtcdTimeout}
	for h := range strings.SplitSeq(strings.TrimSuffix(rest, "/"), ",") {
		h = strings.TrimSpace(h)
		host, port, err := net.SplitHostPort(h)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("ACCORDS_MCP_STORE: endpoint %q is not host:port", h)
		}
		st.Endpoints = append(st.Endpoints, h)
	}
	if p := get("ACCORDS_MCP_ETCD_PREFIX"); p != "" {
		if strings.ContainsAny(p, "\x00\n") {
			return fmt.Errorf("ACCORDS_MCP_ETCD_PREFIX must be printable text, got %q", p)
		}
		st.Prefix = "/" + strings.Trim(p, "/") + "/"
	}
	st.CertFile, st.KeyFile, st.CAFile = get("ACCORDS_MCP_ETCD_CERT"), get("ACCORDS_MCP_ETCD_KEY"), get("ACCORDS_MCP_ETCD_CA")
	if (st.CertFile == "") != (st.KeyFile == "") {
		return fmt.Errorf("ACCORDS_MCP_ETCD_CERT and ACCORDS_MCP_ETCD_KEY go together: set both or neither")
	}
	if st.CertFile != "" || st.CAFile != "" {
		st.TLS = true
	}
	if err := setVar(get, "ACCORDS_MCP_ETCD_TIMEOUT", &st.Timeout, durationFrom(100*time.Millisecond), "a duration of at least 100ms such as 5s"); err != nil {
		return err
	}
	c.Store = st
	return nil
}

// String names the store for logs, health and doctor (no credentials).
func (s *EtcdStore) String() string {
	scheme := "etcd"
	if s.TLS {
		scheme = "etcds"
	}
	return scheme + "://" + strings.Join(s.Endpoints, ",") + s.Prefix
}
