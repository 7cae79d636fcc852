package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// binary is the enginesim executable built by TestMain for the end-to-end
// tests.
var binary string

// TestMain builds the real binary, runs the tests, and fails if any test
// left a goroutine behind.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "enginesim-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "enginesim test: temp dir:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "enginesim")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "enginesim test: build:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
