package logging_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/slotgate/slotgate/internal/logging"
)

func TestSlogWritesThroughZap(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := logging.Slog(zap.New(core, zap.AddCaller()))
	log.Debug("dropped below the zap level")
	log.With("dialect", "vllm").WithGroup("scrape").Warn("engine metrics stale",
		"failed_scrapes", 3, "error", errors.New("refused"), "last_success", time.Unix(0, 0), "ok", false)
	entries := logs.AllUntimed()
	if len(entries) != 1 {
		t.Fatalf("got %d entries, want 1 (debug dropped): %v", len(entries), entries)
	}
	e := entries[0]
	if e.Level != zapcore.WarnLevel || e.Message != "engine metrics stale" {
		t.Errorf("entry %v %q", e.Level, e.Message)
	}
	m := e.ContextMap()
	if m["dialect"] != "vllm" || m["scrape.failed_scrapes"] != int64(3) || m["scrape.error"] != "refused" || m["scrape.ok"] != false {
		t.Errorf("fields = %v", m)
	}
	if !strings.HasSuffix(e.Caller.File, "slog_test.go") {
		t.Errorf("caller = %s, want the line that logged, in slog_test.go", e.Caller)
	}
}
