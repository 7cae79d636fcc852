package command_test

import (
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
)

// TestCollectorPace: without GOGC in its environment, slotgate runs Go's
// collector at 200 while Run runs, logs it, and puts the pace back when
// Run returns; with GOGC, Go's reading of it stands (the test's own pace
// here), and the log names GOGC; empty is none.
func TestCollectorPace(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want func(prev int) int
		log  string
	}{
		{name: "default", want: func(int) int { return 200 }, log: `"gogc":"200","gogc_from":"default"`},
		{name: "GOGC empty", env: map[string]string{"GOGC": ""}, want: func(int) int { return 200 }, log: `"gogc":"200","gogc_from":"default"`},
		{name: "GOGC set", env: map[string]string{"GOGC": "50"}, want: func(prev int) int { return prev }, log: `"gogc":"50","gogc_from":"GOGC"`},
		{name: "GOGC off", env: map[string]string{"GOGC": "off"}, want: func(prev int) int { return prev }, log: `"gogc":"off","gogc_from":"GOGC"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := gcPercent()
			eng := newEngine(t)
			sg := start(t, eng.url(), tt.env)
			if got, want := gcPercent(), tt.want(prev); got != want {
				t.Errorf("GC percent %d while slotgate runs, want %d", got, want)
			}
			if lines := sg.log.Lines(`"msg":"collector"`); len(lines) != 1 || !strings.Contains(lines[0], tt.log) {
				t.Errorf("the log's collector lines %q, want one with %s", lines, tt.log)
			}
			sg.signal(syscall.SIGINT)
			sg.signal(syscall.SIGTERM)
			sg.wait()
			if got := gcPercent(); got != prev {
				t.Errorf("GC percent %d after Run returned, want %d", got, prev)
			}
		})
	}
}

// gcPercent reads the collector's pace, which Go gives only by setting it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
