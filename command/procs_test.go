package command_test

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestRelayProcessors: with the stream relay on, slotgate runs on
// --max-procs plus a processor per relay loop (the loops hold theirs
// while they wait for streams' events), says so in its log, and puts
// GOMAXPROCS back when Run returns; with the relay off, on --max-procs.
func TestRelayProcessors(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stream relay runs on Linux only")
	}
	tests := []struct {
		name  string
		args  []string
		procs int
		want  int
		loops int // logged; 0: no line
	}{
		{name: "relay on", args: []string{"--stream-relay", "epoll"}, procs: 1, want: 2, loops: 1},
		{name: "relay on, two processors", args: []string{"--stream-relay", "epoll"}, procs: 2, want: 4, loops: 2},
		{name: "relay on, two processors, one loop", args: []string{"--relay-loops", "1"}, procs: 2, want: 3, loops: 1},
		{name: "two loops", args: []string{"--relay-loops", "2"}, procs: 1, want: 3, loops: 2},
		{name: "relay off", args: []string{"--stream-relay", "off"}, procs: 1, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prev := runtime.GOMAXPROCS(0)
			t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
			eng := newEngine(t)
			sg := start(t, eng.url(), nil, append(tt.args, "--max-procs", strconv.Itoa(tt.procs))...)
			if got := runtime.GOMAXPROCS(0); got != tt.want {
				t.Errorf("GOMAXPROCS %d while slotgate runs, want %d", got, tt.want)
			}
			lines := sg.log.Lines(`"msg":"stream relay"`)
			if want := fmt.Sprintf(`"loops":%d,"gomaxprocs":%d`, tt.loops, tt.want); tt.loops > 0 && (len(lines) != 1 || !strings.Contains(lines[0], want)) {
				t.Errorf("the log's relay lines %q, want one with %s", lines, want)
			} else if tt.loops == 0 && len(lines) != 0 {
				t.Errorf("the log's relay lines %q with the relay off, want none", lines)
			}
			sg.signal(syscall.SIGINT)
			sg.signal(syscall.SIGTERM)
			sg.wait()
			if got := runtime.GOMAXPROCS(0); got != tt.procs {
				t.Errorf("GOMAXPROCS %d after Run returned, want %d (--max-procs)", got, tt.procs)
			}
		})
	}
}
