package interop_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binDir holds the binaries of the parent module that TestMain built.
var binDir string

// commands are the parent module's programs the checks run as real
// processes.
var commands = []string{"slotgate", "enginesim", "slotgate-loadgen"}

// TestMain builds slotgate's programs once, from the parent module, with
// its default build flags so that what `go vet ./...` and `go build ./...`
// of the parent compiled comes from the build cache.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slotgate-interop-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop: temp dir:", err)
		os.Exit(1)
	}
	binDir = dir
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, c := range commands {
		args = append(args, "./cmd/"+c)
	}
	build := exec.Command("go", args...)
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "interop: build slotgate's commands in ..:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// bin is the path of one of the built programs.
func bin(name string) string { return filepath.Join(binDir, name) }
