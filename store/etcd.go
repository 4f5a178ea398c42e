package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/store/etcdkv"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// ErrUnavailable means the store could not be reached or kept conflicting:
// nothing was written and the call may be retried.
var ErrUnavailable = etcdkv.ErrUnavailable

// ErrTooLarge means one write is larger than etcd accepts in one request.
var ErrTooLarge = etcdkv.ErrTooLarge

// EtcdConfig says how to reach an etcd cluster.
type EtcdConfig struct {
	// Endpoints are host:port pairs.
	Endpoints []string
	// TLS: any of these set (or the etcds:// scheme) makes the connection TLS.
	CertFile, KeyFile, CAFile string
	TLS                       bool
	// Prefix keeps one deployment's keys apart from others on the cluster.
	Prefix string
	// DialTimeout bounds the first connection (default 5s); RequestTimeout
	// bounds each request (default 5s).
	DialTimeout, RequestTimeout time.Duration
	// MaxTxnOps and MaxRequestBytes are the cluster's --max-txn-ops and
	// --max-request-bytes (etcd's defaults when zero).
	MaxTxnOps, MaxRequestBytes int
	// Username and Password for etcd authentication, if enabled.
	Username, Password string
}

// EtcdMaxBundleBytes caps a bundle on etcd: it is written with its row,
// revision and change log in one request (etcd's default limit 1.5 MiB).
const EtcdMaxBundleBytes = 1 << 20

// DefaultEtcdPrefix is the key prefix when none is configured.
const DefaultEtcdPrefix = "/accords-mcp/"

func (c EtcdConfig) tlsConfig() (*tls.Config, error) {
	if !c.TLS && c.CertFile == "" && c.KeyFile == "" && c.CAFile == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("etcd TLS: a client certificate needs its key and a key its certificate")
	}
	if c.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd TLS client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("etcd TLS CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("etcd TLS CA %s: no PEM certificate in it", c.CAFile)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// String names the store without credentials (logs, health, doctor).
func (c EtcdConfig) String() string {
	scheme := "etcd"
	if tc, _ := c.tlsConfig(); tc != nil {
		scheme = "etcds"
	}
	return scheme + "://" + strings.Join(c.Endpoints, ",") + c.prefix()
}

func (c EtcdConfig) prefix() string {
	if c.Prefix == "" {
		return DefaultEtcdPrefix
	}
	p := c.Prefix
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// OpenEtcd connects, checks the schema version under the prefix and applies
// pending migrations, each in one Txn.
func OpenEtcd(cfg EtcdConfig, opts Options) (*DB, error) {
	if opts.Migrations == nil {
		opts.Migrations = migrationsAll()
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, TLS: tc,
		Username: cfg.Username, Password: cfg.Password,
		DialKeepAliveTime: 10 * time.Second, DialKeepAliveTimeout: 3 * time.Second,
		// The client's own zap logging would bypass ours and print on
		// every reconnect; failures reach callers as errors instead.
		Logger: zap.NewNop(),
		// Retry every few seconds, not gRPC's two-minute backoff, so a replica
		// reconnects soon after an etcd restart.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: 2 * time.Second,
		})},
	})
	if err != nil {
		return nil, fmt.Errorf("connect to etcd %s: %w", cfg, err)
	}
	be := etcdkv.New(cli, etcdkv.Options{Prefix: cfg.prefix(), MaxTxnOps: cfg.MaxTxnOps,
		MaxRequestBytes: cfg.MaxRequestBytes, Timeout: cfg.RequestTimeout})
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	_, err = be.Revision(ctx)
	cancel()
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("connect to etcd %s: %w", cfg, err)
	}
	db := &DB{etcd: be, closeEtcd: cli.Close, path: cfg.String(), opts: opts}
	migs := opts.Migrations
	if opts.ReadOnly {
		v, err := db.SchemaVersion()
		if err == nil && v > len(migs) {
			cli.Close()
			return nil, fmt.Errorf("%s: %w (store has version %d, this binary supports %d)", db.path, ErrNewerSchema, v, len(migs))
		}
		return db, err
	}
	if err := db.migrate(migs); err != nil {
		cli.Close()
		return nil, err
	}
	return db, nil
}

func migrationsAll() []migrations.Migration { return migrations.All() }

// Revision is etcd's current revision (0 on bbolt).
func (db *DB) Revision(ctx context.Context) (int64, error) {
	if db.etcd == nil {
		return 0, nil
	}
	return db.etcd.Revision(ctx)
}

// Follow watches the top-level bucket for any replica's commits from
// revision from+1 (0: from now) until ctx ends: changed gets each batch's
// revision, compacted the revision to restart from when history is gone.
// The watch survives reconnects. On bbolt it does nothing.
func (db *DB) Follow(ctx context.Context, bucket []byte, from int64, changed, compacted func(rev int64)) {
	if db.etcd == nil {
		return
	}
	dir := db.etcd.BucketDir(bucket)
	cli := db.etcd.Client()
	go func() {
		next := from + 1
		for ctx.Err() == nil {
			opts := []clientv3.OpOption{clientv3.WithPrefix()}
			if next > 1 {
				opts = append(opts, clientv3.WithRev(next))
			}
			for resp := range cli.Watch(clientv3.WithRequireLeader(ctx), dir, opts...) {
				if resp.CompactRevision != 0 {
					compacted(resp.CompactRevision)
					next = resp.CompactRevision
					break
				}
				if err := resp.Err(); err != nil {
					break // no leader, or cancelled: watch again
				}
				if len(resp.Events) > 0 {
					rev := resp.Events[len(resp.Events)-1].Kv.ModRevision
					changed(rev)
					next = rev + 1
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
}

// WriteBudget is the most keys one transaction should write (0: no bound);
// etcd transactions hold at most 128 operations.
func (db *DB) WriteBudget() int {
	if db.etcd == nil {
		return 0
	}
	return 100
}
