package childproc_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/childproc"
)

func TestListening(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		mode     string
		ctx      context.Context
		wantAddr string
		wantErr  string // "" for none; always with the log file's path unless context.Canceled
	}{
		{name: "listens", mode: "listen", ctx: context.Background(), wantAddr: "127.0.0.1:1"},
		{name: "exits first", mode: "exit", ctx: context.Background(), wantErr: "exits-first exited before listening; see "},
		{name: "cancelled", mode: "stubborn", ctx: cancelled, wantErr: context.Canceled.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := childproc.NewGroup(t.TempDir(), time.Second)
			p := start(t, g, child{name: strings.ReplaceAll(tc.name, " ", "-"), mode: tc.mode})
			line, err := p.Listening(tc.ctx)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Listening() = %v, %v; want an error with %q", line, err, tc.wantErr)
				}
				if tc.ctx.Err() == nil && !strings.Contains(err.Error(), p.LogPath()) {
					t.Errorf("error %q does not name the log file %s", err, p.LogPath())
				}
				return
			}
			if err != nil || line["addr"] != tc.wantAddr {
				t.Fatalf("Listening() = %v, %v; want addr %s", line, err, tc.wantAddr)
			}
		})
	}
}

func TestWaitLine(t *testing.T) {
	tests := []struct {
		name, mode, substr string
		limit              time.Duration
		want, wantErr      string
	}{
		{name: "found", mode: "exit", substr: "by", limit: time.Minute, want: "bye"},
		{name: "exited without it", mode: "exit", substr: "hello", limit: time.Minute, wantErr: `exited without a line with "hello"`},
		{name: "limit passes", mode: "stubborn", substr: "hello", limit: 50 * time.Millisecond, wantErr: `wrote no line with "hello" within 50ms`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := childproc.NewGroup(t.TempDir(), 100*time.Millisecond)
			p := start(t, g, child{name: "c", mode: tc.mode})
			line, err := p.WaitLine(t.Context(), tc.substr, tc.limit)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), p.LogPath()) {
					t.Fatalf("WaitLine(%q) = %q, %v; want an error with %q and %s", tc.substr, line, err, tc.wantErr, p.LogPath())
				}
				return
			}
			if err != nil || line != tc.want {
				t.Fatalf("WaitLine(%q) = %q, %v; want %q", tc.substr, line, err, tc.want)
			}
		})
	}
}

// TestStopAllInReverse: the children are stopped last first, each with
// SIGTERM, in a process group of its own, and recorded in start order.
func TestStopAllInReverse(t *testing.T) {
	dir := t.TempDir()
	stopped := filepath.Join(dir, "stopped")
	g := childproc.NewGroup(dir, time.Minute)
	names := []string{"first", "second", "third"}
	for _, name := range names {
		p := start(t, g, child{name: name, mode: "listen", env: []string{envStopped, stopped}})
		if _, err := p.Listening(t.Context()); err != nil {
			t.Fatal(err)
		}
		if pgid, err := syscall.Getpgid(p.PID()); err != nil || pgid != p.PID() {
			t.Errorf("%s: process group %d (%v), want its own, %d", name, pgid, err, p.PID())
		}
	}
	recs := g.StopAll()
	b, err := os.ReadFile(stopped)
	if got, want := string(b), "third\nsecond\nfirst\n"; err != nil || got != want {
		t.Errorf("stopped in the order %q (%v), want %q", got, err, want)
	}
	if len(recs) != len(names) {
		t.Fatalf("StopAll() = %+v, want %d records", recs, len(names))
	}
	for i, r := range recs {
		if r.Name != names[i] || !r.Ended || r.ExitCode != 0 || r.PID == 0 {
			t.Errorf("record %d = %+v, want %s, ended with 0", i, r, names[i])
		}
	}
}

func TestStop(t *testing.T) {
	tests := []struct {
		name     string
		mode     string
		ended    bool // the child ends by itself before Stop
		wantCode int
	}{
		{name: "SIGKILL after the grace", mode: "stubborn", wantCode: -1},
		{name: "already ended", mode: "exit", ended: true, wantCode: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := childproc.NewGroup(t.TempDir(), 100*time.Millisecond)
			p := start(t, g, child{name: "c", mode: tc.mode})
			if tc.ended {
				<-p.Exited()
			} else if _, err := p.Listening(t.Context()); err != nil {
				t.Fatal(err) // once it listens, it ignores SIGTERM
			}
			p.Stop()
			select {
			case <-p.Exited():
			default:
				t.Fatal("Stop returned before the child was waited for")
			}
			if r := p.Record(); !r.Ended || r.ExitCode != tc.wantCode || p.ExitCode() != tc.wantCode {
				t.Errorf("Record() = %+v, ExitCode() = %d; want ended with %d", r, p.ExitCode(), tc.wantCode)
			}
		})
	}
}

// TestStopReachesTheGroup: what a child started is stopped with it.
func TestStopReachesTheGroup(t *testing.T) {
	h := newHolder(t)
	g := childproc.NewGroup(t.TempDir(), time.Minute)
	p := start(t, g, child{name: "spawner", mode: "spawn", env: h.env()})
	h.waitOpened(t)
	p.Stop()
	h.waitClosed(t, "its parent was stopped")
}

func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, logDir, path, wantErr string
	}{
		{name: "no program", logDir: dir, path: filepath.Join(dir, "nothing"), wantErr: "start c (" + filepath.Join(dir, "nothing") + ")"},
		{name: "no log folder", logDir: filepath.Join(dir, "none"), path: os.Args[0], wantErr: "log file for c"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := childproc.NewGroup(tc.logDir, time.Second).Start("c", tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				if p != nil {
					p.Stop()
				}
				t.Fatalf("Start(%s) = %v; want an error with %q", tc.path, err, tc.wantErr)
			}
			if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Start(%s) = %v; want it to wrap %v", tc.path, err, os.ErrNotExist)
			}
		})
	}
}
