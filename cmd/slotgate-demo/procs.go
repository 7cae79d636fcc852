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

// proc is one child process, its output going to a log file.
type proc struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// startProc starts bin/name with args, its stdout and stderr to
// logDir/name.log.
func startProc(o options, logDir, name string, args ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("log file for %s: %w", name, err)
	}
	cmd := exec.Command(filepath.Join(o.bin, name), args...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	return p, nil
}

// stop asks the process to end (SIGTERM) and kills it if it has not within
// ten seconds. It is safe to call on a process that already exited.
func (p *proc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// listening waits for the JSON log line {"msg":"listening", ...} and
// returns it decoded.
func (p *proc) listening(ctx context.Context) (map[string]any, error) {
	deadline := time.Now().Add(30 * time.Second)
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
		case <-time.After(20 * time.Millisecond):
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
