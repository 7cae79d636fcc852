package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// proc is one child process, in a process group of its own so that
// stopping it stops whatever it started, its output going to a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// procs are the children of one run, stopped in reverse order.
type procs struct {
	logDir string
	list   []*proc
}

// start starts path with args as name, its stdout and stderr to
// logDir/name.log.
func (ps *procs) start(name, path string, args ...string) (*proc, error) {
	logPath := filepath.Join(ps.logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log file for %s: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, path, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	// This goroutine is owned by p: it ends when the process does, and
	// stop waits for it.
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	ps.list = append(ps.list, p)
	return p, nil
}

// stopAll stops every process, the last started first, and returns what
// each became.
func (ps *procs) stopAll() []procRecord {
	for i := len(ps.list) - 1; i >= 0; i-- {
		ps.list[i].stop()
	}
	recs := make([]procRecord, 0, len(ps.list))
	for _, p := range ps.list {
		recs = append(recs, p.record())
	}
	return recs
}

// procRecord is one process in the summary: the e2e test checks that each
// one ended.
type procRecord struct {
	Name     string `json:"name"`
	PID      int    `json:"pid"`
	ExitCode int    `json:"exit_code"` // -1 when ended by a signal
	Ended    bool   `json:"ended"`
}

func (p *proc) record() procRecord {
	r := procRecord{Name: p.name, PID: p.cmd.Process.Pid, ExitCode: -1}
	select {
	case <-p.exited:
		r.Ended, r.ExitCode = true, p.cmd.ProcessState.ExitCode()
	default:
	}
	return r
}

// stop sends SIGTERM to the process's group, then SIGKILL if it has not
// ended within five seconds. It is safe on a process that already ended.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	pgid := p.cmd.Process.Pid // Setpgid: the group is the leader's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.exited
	}
}

// listening waits for the process's JSON log line with "msg":"listening"
// and returns it decoded.
func (p *proc) listening(ctx context.Context) (map[string]any, error) {
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		if line, ok := findLine(p.logPath, `"msg":"listening"`); ok {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				return nil, fmt.Errorf("%s: parse %q: %w", p.name, line, err)
			}
			return m, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("%s exited before listening; see %s", p.name, p.logPath)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
	return nil, fmt.Errorf("%s did not listen within 30s; see %s", p.name, p.logPath)
}

func findLine(path, substr string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			return sc.Text(), true
		}
	}
	return "", false
}
