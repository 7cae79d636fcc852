package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs `make demo`'s program for real: enginesim, slotgate and the
// load generator as processes. Its figures must add up: every request sent
// was served or refused, the 529s the client saw are the ones slotgate
// counted, and slots and queue never went above N and Q.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo drives a burst for two seconds; skipped with -short")
	}
	summaryPath := filepath.Join(t.TempDir(), "summary.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "slotgate-demo"), "--bin", binDir,
		"--duration", "2s", "--concurrency", "32", "--summary-json", summaryPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("slotgate-demo: %v\n%s", err, out)
	}
	var s struct {
		Sent           int     `json:"sent"`
		ServedDirect   int     `json:"served_direct"`
		ServedQueued   int     `json:"served_from_queue"`
		Rejected529    int     `json:"rejected_529"`
		OtherStatuses  int     `json:"other_statuses"`
		ClientOK       int     `json:"client_200"`
		MaxEngine      float64 `json:"max_dynamo_engine_request"`
		MaxQueue       float64 `json:"max_dynamo_request_queue"`
		RejectionTotal float64 `json:"dynamo_rejection_request_total"`
	}
	b, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("summary %s: %v", b, err)
	}
	if s.Sent == 0 || s.Rejected529 == 0 || s.ServedDirect+s.ServedQueued == 0 {
		t.Errorf("a burst of 32 streams against N+Q=12 should serve some and refuse some: %s", b)
	}
	if s.ServedDirect+s.ServedQueued+s.Rejected529+s.OtherStatuses != s.Sent {
		t.Errorf("served + rejected + other != sent: %s", b)
	}
	if s.ClientOK != s.ServedDirect+s.ServedQueued || float64(s.Rejected529) != s.RejectionTotal {
		t.Errorf("client and slotgate disagree: %s", b)
	}
	if s.MaxEngine > 8 || s.MaxQueue > 4 {
		t.Errorf("slots or queue above N=8, Q=4: %s", b)
	}
	for _, want := range []string{"Summary (N=8 engine slots, Q=4 queue places)", "dynamo_rejection_request_total", "Every process stopped"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
