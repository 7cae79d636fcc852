package e2e_test

import (
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestKilledClientProcessForwardsNothingQueued: a client process with 8
// requests running and 32 queued is killed. Every socket closes at once,
// so the running requests are aborted and free their slots while the
// queued clients' closes are still unread; slotgate must still forward
// none of the queued requests (it looks at the socket when it grants a
// slot). Before it did, 2 to 7 of 32 reached the engine in such a run.
func TestKilledClientProcessForwardsNothingQueued(t *testing.T) {
	const slots, queued = 8, 32
	eng := newEngine(t)
	eng.hold()
	t.Cleanup(eng.release)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "8", "--request-queue-limit", "32")
	load := exec.Command(filepath.Join(binDir, "slotgate-loadgen"), "--url", sg.proxy,
		"--concurrency", "40", "--duration", "60s", "--stream=false", "--progress-interval", "0")
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = load.Process.Kill(); _ = load.Wait() })
	eng.waitInFlight(t, slots)
	eventually(t, "32 queued", func() bool { return sg.metric("dynamo_request_queue") == queued })

	if err := load.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = load.Wait()
	eventually(t, "the slots and the queue to empty", func() bool {
		return sg.metric("dynamo_engine_request") == 0 && sg.metric("dynamo_request_queue") == 0
	})
	_, maxIn, seen, cancelled := eng.stats()
	if len(seen) != slots || maxIn != slots {
		t.Errorf("the engine received %d requests, at most %d at once; want exactly the %d admitted before the client died",
			len(seen), maxIn, slots)
	}
	if len(cancelled) != slots {
		t.Errorf("the engine saw %d of its requests cancelled, want all %d", len(cancelled), slots)
	}
	if got := sg.metric("slotgate_requests_total", "outcome", "cancelled_queued"); got != queued {
		t.Errorf("cancelled_queued = %v, want %d", got, queued)
	}
}
