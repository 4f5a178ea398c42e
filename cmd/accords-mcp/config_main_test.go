package main

import (
	"os"
	"testing"

	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/accordsai/accords-mcp/test/testenv"
)

// TestMain keeps the tests away from the real user config dir (the audit
// key file's default location).
func TestMain(m *testing.M) {
	cleanup := testenv.IsolateConfigDir()
	code := m.Run()
	cleanup()
	testbin.Remove()
	os.Exit(code)
}
