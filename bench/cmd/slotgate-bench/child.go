package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// child is one of the driver's own subcommands run as a child process
// (the engine, the clients that get killed), with its stdout read line by
// line through a pipe.
type child struct {
	cmd   *exec.Cmd
	done  <-chan struct{}
	lines <-chan string // closed when its stdout closes
	log   string
}

// startChild re-executes the driver's binary with args; its stderr goes to
// a log in runDir named after the subcommand.
func startChild(p *procs, runDir string, args ...string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	log := filepath.Join(runDir, args[0]+".log")
	cmd, done, err := p.start(log, w, self, args...)
	w.Close() // the child holds its own copy; EOF comes when it exits
	if err != nil {
		r.Close()
		return nil, err
	}
	return &child{cmd: cmd, done: done, lines: readLines(r), log: log}, nil
}

// readLines sends r's lines on the returned channel and closes it at EOF.
// The buffer holds more lines than any child prints, so the reader never
// blocks a child that nobody listens to any more.
func readLines(r io.ReadCloser) <-chan string {
	ch := make(chan string, 256)
	go func() {
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			default: // nobody reads: drop it
			}
		}
		close(ch)
	}()
	return ch
}

// await waits up to timeout for a line that starts with prefix and returns
// the rest of it.
func (c *child) await(ctx context.Context, prefix string, timeout time.Duration) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return "", fmt.Errorf("%s exited before saying %q; its log ends:\n%s", c.cmd.Args[1], prefix, tail(c.log, 2000))
			}
			if rest, found := strings.CutPrefix(l, prefix); found {
				return rest, nil
			}
		case <-t.C:
			return "", fmt.Errorf("%s did not say %q within %v", c.cmd.Args[1], prefix, timeout)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// engineProc is the driver's handle on the engine child.
type engineProc struct {
	addr string
	c    *http.Client
}

func startEngine(ctx context.Context, p *procs, runDir string) (*engineProc, error) {
	ch, err := startChild(p, runDir, "engine", "--listen", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr, err := ch.await(ctx, "listening ", 10*time.Second)
	if err != nil {
		p.stop(ch.cmd)
		return nil, err
	}
	return &engineProc{addr: addr, c: &http.Client{Timeout: 5 * time.Second}}, nil
}

// reset sets the engine's slots (0: unlimited) and zeroes its counters.
func (e *engineProc) reset(ctx context.Context, slots int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://%s/_reset?slots=%d", e.addr, slots), nil)
	if err != nil {
		return err
	}
	resp, err := e.c.Do(req)
	if err != nil {
		return fmt.Errorf("engine reset: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // only the status matters
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("engine reset: status %d", resp.StatusCode)
	}
	return nil
}

func (e *engineProc) stats(ctx context.Context) (engineStats, error) {
	var s engineStats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.addr+"/_stats", nil)
	if err != nil {
		return s, err
	}
	resp, err := e.c.Do(req)
	if err != nil {
		return s, fmt.Errorf("engine stats: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("engine stats: %w", err)
	}
	return s, nil
}
