package orchestration

import (
	"testing"

	"go.uber.org/goleak"
)

// Resolution must not leave goroutines behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
