package logging_test

import (
	"bytes"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/internal/logging"
)

func TestNewFormats(t *testing.T) {
	tests := []struct {
		name, format string
		want         *regexp.Regexp
	}{
		{"json", "json", regexp.MustCompile(`^\{"level":"info","ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[-+Z][0-9:]*","logger":"svc","msg":"hello","took":1\.5\}\n$`)},
		{"console", "console", regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[-+Z][0-9:]*\tINFO\tsvc\thello\t\{"took": 1\.5\}\n$`)},
		{"anything else is json", "", regexp.MustCompile(`^\{"level":"info",.*"took":1\.5\}\n$`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			log, err := logging.New("svc", "info", tt.format, &b)
			if err != nil {
				t.Fatal(err)
			}
			log.Info("hello", zap.Duration("took", 1500*time.Millisecond))
			if !tt.want.MatchString(b.String()) {
				t.Errorf("wrote %q, want a match for %s", b.String(), tt.want)
			}
		})
	}
}

func TestNewLevels(t *testing.T) {
	tests := []struct {
		level   string
		wantErr bool
		lines   int // of one debug, one info and one warn line
	}{
		{"debug", false, 3},
		{"info", false, 2},
		{"warn", false, 1},
		{"error", false, 0},
		{"loud", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.level, func(t *testing.T) {
			var b bytes.Buffer
			log, err := logging.New("svc", tt.level, "json", &b)
			if tt.wantErr {
				if err == nil || !strings.HasPrefix(err.Error(), "log level: ") {
					t.Fatalf("New(%q) = %v, want a log level error", tt.level, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Debug("d")
			log.Info("i")
			log.Warn("w")
			if got := strings.Count(b.String(), "\n"); got != tt.lines {
				t.Errorf("%d lines at %s, want %d:\n%s", got, tt.level, tt.lines, b.String())
			}
		})
	}
}

// TestNewNeverSamples: zap's production sampler would keep only the first
// 100 of a repeated message each second.
func TestNewNeverSamples(t *testing.T) {
	var b bytes.Buffer
	log, err := logging.New("svc", "info", "json", &b)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500
	for range n {
		log.Info("same")
	}
	dec := json.NewDecoder(&b)
	got := 0
	for dec.More() {
		var line map[string]any
		if err := dec.Decode(&line); err != nil {
			t.Fatal(err)
		}
		got++
	}
	if got != n {
		t.Errorf("%d lines, want %d", got, n)
	}
}

func TestNewNamesChildren(t *testing.T) {
	var b bytes.Buffer
	log, err := logging.New("svc", "info", "json", &b)
	if err != nil {
		t.Fatal(err)
	}
	log.Named("proxy").Info("x")
	if !strings.Contains(b.String(), `"logger":"svc.proxy"`) {
		t.Errorf("wrote %q, want logger svc.proxy", b.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for the flushing goroutine.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() (lines, writes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), "\n"), l.writes
}

// TestBufferedBatchesAndFlushes: a buffered logger writes nothing until
// its interval passes, then every waiting line in one write; a full
// buffer is written at once; stop writes the rest.
func TestBufferedBatchesAndFlushes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &lockedBuffer{}
		log, stop, err := logging.Buffered("svc", "info", "json", out, 4096, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for range 10 {
			log.Info("request", zap.Int("status", 200))
		}
		if n, w := out.lines(); n != 0 || w != 0 {
			t.Fatalf("before the interval: %d lines in %d writes, want none", n, w)
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if n, w := out.lines(); n != 10 || w != 1 {
			t.Fatalf("after the interval: %d lines in %d writes, want 10 in 1", n, w)
		}
		for range 100 { // about 6 KiB: passes the 4 KiB buffer once
			log.Info("request", zap.Int("status", 200))
		}
		if n, _ := out.lines(); n <= 10 || n >= 110 {
			t.Errorf("with the buffer full: %d lines, want some written at once and some waiting", n)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if n, _ := out.lines(); n != 110 {
			t.Errorf("after stop: %d lines, want all 110", n)
		}
	})
}

func TestBufferedRefusesBadLevel(t *testing.T) {
	if _, _, err := logging.Buffered("svc", "loud", "json", io.Discard, 1024, time.Second); err == nil {
		t.Fatal("Buffered with level loud: no error")
	}
}
