// Package testbin builds the accords-mcp command for the suites that run
// it as a separate process (protocol clients, agent runtimes, replicas,
// reliability, docs). It is built once per test process, without -race:
// the binary is the system under test, and an instrumented one is several
// times slower.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

const pkg = "github.com/accordsai/accords-mcp/cmd/accords-mcp"

var (
	once sync.Once
	dir  string
	path string
	err  error
)

// AccordsMCP returns the path of the built command, building it on first
// use; a build failure fails t.
func AccordsMCP(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if dir, err = os.MkdirTemp("", "accords-mcp-testbin-"); err != nil {
			return
		}
		path = filepath.Join(dir, "accords-mcp")
		if out, berr := exec.Command("go", "build", "-o", path, pkg).CombinedOutput(); berr != nil {
			err = fmt.Errorf("go build %s: %w\n%s", pkg, berr, out)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// Main runs the tests and removes the built command afterwards: a
// package's TestMain is `func TestMain(m *testing.M) { testbin.Main(m) }`,
// or calls Remove itself.
func Main(m *testing.M) {
	code := m.Run()
	Remove()
	os.Exit(code)
}

// Remove deletes the built command, if any.
func Remove() {
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
}
