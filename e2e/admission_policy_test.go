package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// policyYAML gives interactive requests a far larger share than batch
// ones, chosen by the X-Priority header.
const policyYAML = `# two tiers
request_classifier:
  type: header-class
  parameters:
    header: x-priority
    allow: [interactive, batch]
    default: batch
default_policy_class: batch
policy_classes:
  - name: interactive
    quantum: 100000
  - name: batch
    quantum: 1
`

// TestInteractiveOvertakesBatch is issue 5 end to end: the real binary
// with a YAML policy and two classes. Batch requests queue first, then
// interactive ones arrive; as the one engine slot frees, the interactive
// requests reach the engine before the batch ones queued before them,
// and the engine never sees more than N=1.
func TestInteractiveOvertakesBatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(path, []byte(policyYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t)
	e.hold()
	s := start(t, e.url(), nil, "--engine-request-limit", "1", "--request-queue-limit", "16", "--admission-config", path)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	done := make(chan result, 16)
	send := func(id, priority string) {
		go func() { done <- postWithPriority(ctx, s.proxy, id, priority) }()
	}
	send("holder", "batch")
	e.waitInFlight(t, 1)
	queued := 0
	for i, p := range []string{"batch", "batch", "batch", "batch", "interactive", "interactive", "interactive"} {
		send(fmt.Sprintf("%s-%d", p, i), p)
		queued++
		eventually(t, fmt.Sprintf("%d queued", queued), func() bool { return s.metric("dynamo_request_queue") == float64(queued) })
	}
	e.release()
	for range queued + 1 {
		if r := <-done; r.err != nil || r.status != http.StatusOK {
			t.Fatalf("answer %d %v %s", r.status, r.err, r.body)
		}
	}
	_, maxInFlight, seen, _ := e.stats()
	if maxInFlight != 1 {
		t.Errorf("the engine saw %d at once, want at most N=1", maxInFlight)
	}
	// After the holder, the three interactive requests, then the batch
	// ones in their own order.
	want := []string{"holder", "interactive-4", "interactive-5", "interactive-6", "batch-0", "batch-1", "batch-2", "batch-3"}
	if !slices.Equal(seen, want) {
		t.Errorf("engine order %v, want %v", seen, want)
	}
	if n := s.metric("slotgate_requests_total", "outcome", "admitted_queued", "class", "interactive"); n != 3 {
		t.Errorf("admitted_queued{class=interactive} = %v, want 3", n)
	}
	if n := s.metric("slotgate_requests_total", "outcome", "admitted_queued", "class", "batch"); n != 4 {
		t.Errorf("admitted_queued{class=batch} = %v, want 4", n)
	}
}

// TestBadAdmissionConfigStopsStartUp: a policy file with a mistake stops
// start-up with exit status 2 and a message naming the file and field.
func TestBadAdmissionConfigStopsStartUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.yaml")
	bad := strings.Replace(policyYAML, "quantum: 1\n", "quantum: 0\n", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	s := launch(t, "http://127.0.0.1:1", nil, "--admission-config", path)
	if code := s.wait(); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	out := s.log.String()
	for _, want := range []string{"--admission-config", "bad.yaml", "quantum"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func postWithPriority(ctx context.Context, proxy, id, priority string) result {
	return postHeaders(ctx, http.DefaultClient, proxy, id, `{"model":"m","prompt":"hello"}`, http.Header{"X-Priority": {priority}})
}
