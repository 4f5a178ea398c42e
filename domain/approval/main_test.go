package approval

import (
	"testing"

	"go.uber.org/goleak"
)

// Waits must not leave goroutines behind (cancelled or timed out).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
