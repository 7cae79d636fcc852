package interop_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// listenLimit bounds the wait for a program's "listening" log line.
const listenLimit = 30 * time.Second

// proc is one of slotgate's programs run as a real process by a test; it
// is killed when the test ends, and the end of its output shown if the
// test failed.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	out    *procOutput
	exited chan struct{} // closed once the process was waited for
}

// startProc runs bin(name) with args in a minimal environment: PATH and
// env ("KEY=value" each).
func startProc(t *testing.T, name string, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin(name), args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	p := &proc{t: t, name: name, cmd: cmd, out: newProcOutput(), exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	// This goroutine ends when the process does; kill waits for it.
	go func() { _ = cmd.Wait(); p.out.close(); close(p.exited) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, outputTail(p.out.String(), 40))
		}
	})
	return p
}

// kill ends the process at once, as a crash would, and waits for it. It
// is safe on a process that already ended.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// listening waits up to listenLimit for the process's JSON "listening"
// line and decodes it into v; the test fails when none comes.
func (p *proc) listening(v any) {
	p.t.Helper()
	line, ok := p.out.waitFor(`"msg":"listening"`, listenLimit)
	if !ok {
		p.t.Fatalf("%s did not log its listening line; output:\n%s", p.name, outputTail(p.out.String(), 20))
	}
	if err := json.Unmarshal([]byte(line), v); err != nil {
		p.t.Fatalf("%s listening line %q: %v", p.name, line, err)
	}
}

// outputTail is the last n lines of s.
func outputTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// procOutput collects a process's output and wakes the waits for a line.
type procOutput struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	change chan struct{} // closed and replaced on every write and at close
	closed bool
}

func newProcOutput() *procOutput { return &procOutput{change: make(chan struct{})} }

func (o *procOutput) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(b)
	close(o.change)
	o.change = make(chan struct{})
	return len(b), nil
}

func (o *procOutput) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	close(o.change)
	o.change = make(chan struct{})
}

func (o *procOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor returns the first line holding substr, waiting up to limit; ok
// is false when the limit passed or the process ended without it.
func (o *procOutput) waitFor(substr string, limit time.Duration) (line string, ok bool) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		text, change, closed := o.buf.String(), o.change, o.closed
		o.mu.Unlock()
		sc := bufio.NewScanner(strings.NewReader(text))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), substr) {
				return sc.Text(), true
			}
		}
		if closed {
			return "", false
		}
		select {
		case <-change:
		case <-deadline.C:
			return "", false
		}
	}
}
