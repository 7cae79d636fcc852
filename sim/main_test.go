package sim

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// scheduling loop and handler must end with its context.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
