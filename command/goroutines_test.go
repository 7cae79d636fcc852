package command

import (
	"runtime"
	"strings"
	"testing"
)

// NoneRunning is noneRunning for the black-box tests.
var NoneRunning = noneRunning

// ownGoroutines returns the stacks of the goroutines running slotgate's
// code, outside the tests' own: once Run returned, on a path where it
// waits for what it started, there must be none, at once, without
// retrying. (goleak, which retries, cannot tell a goroutine that ended
// before Run returned from one that ended just after.) Only the frames
// count, not the "created by" line: a goroutine that has finished its
// function but not yet exited (after wg.Done, or in runtime.goexit) runs
// none of slotgate's code.
func ownGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		frames, _, _ := strings.Cut(g, "\ncreated by ")
		if strings.Contains(frames, "github.com/slotgate/slotgate/") && !strings.Contains(frames, "_test.go:") {
			out = append(out, g)
		}
	}
	return out
}

// noneRunning fails the test if ownGoroutines finds any.
func noneRunning(t *testing.T) {
	t.Helper()
	if g := ownGoroutines(); len(g) > 0 {
		t.Errorf("%d goroutines run slotgate's code after Run returned:\n%s", len(g), strings.Join(g, "\n\n"))
	}
}
