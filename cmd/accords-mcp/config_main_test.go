package main

import (
	"os"
	"testing"

	"github.com/accordsai/accords-mcp/test/otheruser"
	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/accordsai/accords-mcp/test/testenv"
)

// TestMain keeps the tests away from the real user config dir (the audit
// key file's default location). The test binary also serves as another
// user's listener (otheruser) in the control socket tests.
func TestMain(m *testing.M) {
	otheruser.Main()
	cleanup := testenv.IsolateConfigDir()
	code := m.Run()
	cleanup()
	testbin.Remove()
	otheruser.Cleanup()
	os.Exit(code)
}
