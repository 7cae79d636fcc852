package childproc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

const (
	// ListenLimit is how long Listening waits for the listening line.
	ListenLimit = 30 * time.Second
	// listeningLine marks the JSON log line slotgate's programs write
	// once their listeners are bound.
	listeningLine = `"msg":"listening"`
	// pollInterval is how often a wait reads the log file again.
	pollInterval = 20 * time.Millisecond
)

// Why waitLine found no line; the exported waits turn them into errors
// that name the child and its log file.
var (
	errExited = errors.New("exited")
	errNoLine = errors.New("no line within the limit")
)

// Listening waits up to ListenLimit for the child's JSON log line with
// "msg":"listening" and returns it decoded. It fails when the child ended
// first, the limit passed (both errors name the log file), the line is
// not JSON, or ctx ended (ctx.Err(), unwrapped).
func (p *Proc) Listening(ctx context.Context) (map[string]any, error) {
	line, err := p.waitLine(ctx, listeningLine, ListenLimit)
	switch {
	case errors.Is(err, errExited):
		return nil, fmt.Errorf("%s exited before listening; see %s", p.name, p.logPath)
	case errors.Is(err, errNoLine):
		return nil, fmt.Errorf("%s did not listen within %s; see %s", p.name, ListenLimit, p.logPath)
	case err != nil:
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return nil, fmt.Errorf("%s: parse %q: %w", p.name, line, err)
	}
	return m, nil
}

// WaitLine returns the first line of the child's log that contains
// substr, waiting for it up to limit. It fails when the child ended
// without writing it, the limit passed (both errors name the log file),
// or ctx ended (ctx.Err(), unwrapped).
func (p *Proc) WaitLine(ctx context.Context, substr string, limit time.Duration) (string, error) {
	line, err := p.waitLine(ctx, substr, limit)
	switch {
	case errors.Is(err, errExited):
		return "", fmt.Errorf("%s exited without a line with %q; see %s", p.name, substr, p.logPath)
	case errors.Is(err, errNoLine):
		return "", fmt.Errorf("%s wrote no line with %q within %s; see %s", p.name, substr, limit, p.logPath)
	}
	return line, err
}

// waitLine reads the log file every pollInterval until it holds a line
// with substr; it returns errExited, errNoLine or ctx.Err() when none
// came.
func (p *Proc) waitLine(ctx context.Context, substr string, limit time.Duration) (string, error) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		if line, ok := findLine(p.logPath, substr); ok {
			return line, nil
		}
		select {
		case <-p.exited:
			// The child may have written the line just before it ended.
			if line, ok := findLine(p.logPath, substr); ok {
				return line, nil
			}
			return "", errExited
		case <-ctx.Done():
			return "", ctx.Err()
		case <-deadline.C:
			return "", errNoLine
		case <-tick.C:
		}
	}
}

// findLine returns the first line of the file at path that contains
// substr; ok is false when there is none or the file cannot be read.
func findLine(path, substr string) (line string, ok bool) {
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
