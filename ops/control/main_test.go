package control_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The control server must leave no goroutine behind once its context ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
