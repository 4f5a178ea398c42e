//go:build tools

package tools

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/blevesearch/bleve/v2"
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/stretchr/testify/require"
	_ "go.etcd.io/bbolt"
	_ "go.uber.org/goleak"
)
