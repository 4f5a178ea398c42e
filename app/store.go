package app

import (
	"github.com/accordsai/accords-mcp/platform/config"
	"github.com/accordsai/accords-mcp/store"
)

// OpenStore opens the configured store: the bbolt file at cfg.DBPath, or
// the etcd cluster of ACCORDS_MCP_STORE.
func OpenStore(cfg config.Config, o store.Options) (*store.DB, error) {
	if cfg.Store == nil {
		return store.Open(cfg.DBPath, o)
	}
	return store.OpenEtcd(EtcdConfig(cfg.Store), o)
}

// EtcdConfig is the store's view of the etcd settings.
func EtcdConfig(s *config.EtcdStore) store.EtcdConfig {
	return store.EtcdConfig{Endpoints: s.Endpoints, TLS: s.TLS, Prefix: s.Prefix, CertFile: s.CertFile,
		KeyFile: s.KeyFile, CAFile: s.CAFile, RequestTimeout: s.Timeout}
}
