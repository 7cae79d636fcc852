package soak

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is one child process whose output goes to a log file. Lines
// that match its keep function are also kept in memory, so that the
// driver can wait for them ("listening", "final stats").
type process struct {
	name   string
	cmd    *exec.Cmd
	out    *tap
	file   *os.File
	exited chan struct{} // closed once the process has been waited for
}

// startProcess runs path with args, its stdout and stderr written to
// logPath, emptied first: the access-log check reads the whole file, and a
// log left by an earlier soak in the same --out would hold the same
// request ids; keep picks the lines kept in memory.
func startProcess(name, path string, args []string, logPath string, keep func([]byte) bool) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("soak: %s log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	setParentDeath(cmd)
	out := &tap{w: f, keep: keep, change: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("soak: start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, out: out, file: f, exited: make(chan struct{})}
	go func() { // ends with the process
		_ = cmd.Wait()
		out.close()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// waitLine waits for a kept line containing substr and returns it.
func (p *process) waitLine(substr string, limit time.Duration) (string, error) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		line, change, closed := p.out.find(substr)
		if line != "" {
			return line, nil
		}
		if closed {
			return "", fmt.Errorf("soak: %s exited without logging %q", p.name, substr)
		}
		select {
		case <-change:
		case <-deadline.C:
			return "", fmt.Errorf("soak: %s logged no %q within %s", p.name, substr, limit)
		}
	}
}

// stop sends SIGTERM, a second SIGTERM after grace (enginesim and
// slotgate then close what is still open), SIGKILL after another grace,
// and waits for the process to exit. It reports whether the process
// exited before it had to be killed.
func (p *process) stop(grace time.Duration) error {
	steps := []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGKILL}
	for i, sig := range steps {
		_ = p.cmd.Process.Signal(sig)
		select {
		case <-p.exited:
			return nil
		case <-time.After(grace):
		}
		if i == len(steps)-1 {
			<-p.exited // SIGKILL cannot be ignored
		}
	}
	return fmt.Errorf("soak: %s ignored two SIGTERMs for %s each and was killed", p.name, grace)
}

// kill ends the process at once and waits for it; for clean-up paths.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// tap writes a process's output to its log file and keeps the lines its
// keep function picks. Write is called from exec's copying goroutine.
type tap struct {
	w    *os.File
	keep func([]byte) bool

	mu      sync.Mutex
	partial []byte
	kept    []string
	change  chan struct{} // closed and replaced when a line is kept
	closed  bool
	alarms  []string // data race reports and panics, the first few
}

func (t *tap) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	data := p
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			t.partial = append(t.partial, data...)
			break
		}
		line := data[:i]
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = t.partial[:0]
		}
		t.line(line)
		data = data[i+1:]
	}
	return n, err
}

// line looks at one complete line; t.mu is held.
func (t *tap) line(line []byte) {
	if (bytes.Contains(line, []byte("WARNING: DATA RACE")) || bytes.HasPrefix(line, []byte("panic:")) ||
		bytes.HasPrefix(line, []byte("fatal error:"))) && len(t.alarms) < 5 {
		t.alarms = append(t.alarms, string(line))
	}
	if t.keep != nil && t.keep(line) {
		t.kept = append(t.kept, string(line))
		close(t.change)
		t.change = make(chan struct{})
	}
}

func (t *tap) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.partial) > 0 {
		t.line(t.partial)
		t.partial = nil
	}
	t.closed = true
	close(t.change)
	t.change = make(chan struct{})
}

// find returns the last kept line containing substr ("" when none), a
// channel closed at the next kept line, and whether the output ended.
func (t *tap) find(substr string) (string, <-chan struct{}, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.kept) - 1; i >= 0; i-- {
		if strings.Contains(t.kept[i], substr) {
			return t.kept[i], t.change, t.closed
		}
	}
	return "", t.change, t.closed
}

// alarming returns the first lines of the data race reports and panics
// the process printed.
func (t *tap) alarming() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.alarms...)
}
