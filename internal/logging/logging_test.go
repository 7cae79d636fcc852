package logging_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
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
