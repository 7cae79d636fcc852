package engine_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every
// server and client is closed in t.Cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
