package remote

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test closes its servers and the service's idle connections; no
// fetch may leave a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
