package proxy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every
// server, client and engine connection is closed in t.Cleanup.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
