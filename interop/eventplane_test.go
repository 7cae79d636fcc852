package interop_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// subject is where slotgate publishes for the default endpoint,
// dyn://dynamo.backend.generate.
const subject = "namespace.dynamo.component.backend.endpoint.generate.kv_metrics"

// startWorker starts enginesim and slotgate in front of it, publishing to
// the NATS server at natsURL with a 1 s heartbeat, and returns slotgate's
// proxy address.
func startWorker(t *testing.T, natsURL string, env []string, engineArgs ...string) string {
	t.Helper()
	var engine struct{ Addr string }
	startProc(t, "enginesim", nil, append([]string{"--listen", "127.0.0.1:0"}, engineArgs...)...).listening(&engine)
	var sg struct{ Proxy string }
	startProc(t, "slotgate", env, "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--admin-grpc-listen", "off", "--access-log=false", "--engine-url", "http://"+engine.Addr,
		"--engine-metrics-interval", "50ms", "--dynamo-event-plane", natsURL, "--dynamo-event-heartbeat", "1s").listening(&sg)
	return sg.Proxy
}

// readGolden reads a testdata file of hex bytes with "#" comments.
func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var digits strings.Builder
	for line := range strings.Lines(string(text)) {
		line, _, _ = strings.Cut(line, "#")
		digits.WriteString(strings.Join(strings.Fields(line), ""))
	}
	b, err := hex.DecodeString(digits.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// TestEventPlaneGoldenMessage: the first message of an idle worker, as a
// real NATS server delivers it, is byte for byte the golden file built
// from Dynamo's source, but for published_at, which is the time it was
// sent: the received value is copied into the golden bytes before they
// are compared, after checking it is that time.
func TestEventPlaneGoldenMessage(t *testing.T) {
	ns := runNATS(t, -1)
	msgs, _ := subscribe(t, ns.ClientURL(), subject)
	before := uint64(time.Now().UnixMilli())
	startWorker(t, ns.ClientURL(), []string{"POD_NAME=worker-0"})
	m := next(t, msgs, 30*time.Second)
	after := uint64(time.Now().UnixMilli())
	if m.env.PublishedAt < before || m.env.PublishedAt > after {
		t.Errorf("published_at %d outside the test's [%d, %d]", m.env.PublishedAt, before, after)
	}
	want := readGolden(t, "../load/eventplane/testdata/idle.hex")
	placeholder := binary.BigEndian.AppendUint64([]byte{0xcf}, 1_700_000_000_000)
	if bytes.Count(want, placeholder) != 1 {
		t.Fatal("idle.hex: published_at placeholder not found once")
	}
	want = bytes.Replace(want, placeholder, binary.BigEndian.AppendUint64([]byte{0xcf}, m.env.PublishedAt), 1)
	if !bytes.Equal(m.raw, want) {
		t.Errorf("message bytes\n got %x\nwant %x", m.raw, want)
	}
}

// TestEventPlaneFollowsTheEngine: over a real NATS server, slotgate's
// messages decode as Dynamo's ActiveLoad, follow enginesim's KV blocks on
// each of its two ranks, keep coming as heartbeats when nothing changes,
// and survive a restart of the server, the latest state first.
func TestEventPlaneFollowsTheEngine(t *testing.T) {
	ns := runNATS(t, -1)
	port := natsPort(ns)
	msgs, _ := subscribe(t, ns.ClientURL(), subject)
	proxy := startWorker(t, ns.ClientURL(), []string{"SLOTGATE_DYNAMO_WORKER_ID=0xabc"}, "--data-parallel-size", "2", "--speedup-ratio", "0.1")

	// Idle: both ranks at 0, checked field by field.
	idle := map[uint32]bool{}
	var lastSeq uint64
	for len(idle) < 2 {
		m := next(t, msgs, 30*time.Second)
		checkMessage(t, m, lastSeq)
		lastSeq = m.env.Sequence
		if kv(t, m) == 0 {
			idle[m.load.DPRank] = true
		}
	}

	// Heartbeat: with nothing changing, each rank again within ~1 s.
	start := time.Now()
	beat := map[uint32]bool{}
	for len(beat) < 2 {
		m := next(t, msgs, 3*time.Second)
		if kv(t, m) != 0 {
			t.Fatalf("rank %d at %d blocks while idle", m.load.DPRank, kv(t, m))
		}
		beat[m.load.DPRank] = true
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("heartbeat of both ranks took %v, want about 1s", d)
	}

	// Load: both ranks' blocks rise, then fall back to 0 when it ends.
	ctx, cancel := context.WithCancel(t.Context())
	wg := holdCompletions(ctx, t, proxy, 8)
	waitRanks(t, msgs, func(v uint64) bool { return v > 0 }, "above 0 under load")
	cancel()
	wg.Wait()
	waitRanks(t, msgs, func(v uint64) bool { return v == 0 }, "back to 0 after the load")

	// Restart: the server goes away for 3 s; the load changes meanwhile;
	// the new server on the same port gets the latest state first.
	ns.Shutdown()
	ns.WaitForShutdown()
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	wg = holdCompletions(ctx, t, proxy, 8)
	defer wg.Wait()
	defer cancel()
	time.Sleep(3 * time.Second) // while the server is down; slotgate's backoff grows
	ns2 := runNATS(t, port)
	msgs2, _ := subscribe(t, ns2.ClientURL(), subject)
	first := map[uint32]uint64{}
	for len(first) < 2 {
		m := next(t, msgs2, 15*time.Second)
		if _, seen := first[m.load.DPRank]; !seen {
			first[m.load.DPRank] = kv(t, m)
		}
	}
	for rank, v := range first {
		if v == 0 {
			t.Errorf("rank %d: first message after the restart says 0 blocks, the state before the outage, not the latest", rank)
		}
	}
}

// checkMessage checks everything but the counts of one message.
func checkMessage(t *testing.T, m received, lastSeq uint64) {
	t.Helper()
	if m.subject != subject {
		t.Errorf("subject %q, want %q", m.subject, subject)
	}
	if m.env.PublisherID != 0xabc || m.load.WorkerID != 0xabc {
		t.Errorf("publisher_id %#x, worker_id %#x, want 0xabc", m.env.PublisherID, m.load.WorkerID)
	}
	if m.env.Topic != "kv_metrics" {
		t.Errorf("topic %q", m.env.Topic)
	}
	if m.env.Sequence != 0 && m.env.Sequence != lastSeq+1 {
		t.Errorf("sequence %d after %d", m.env.Sequence, lastSeq)
	}
	if d := time.Since(time.UnixMilli(int64(m.env.PublishedAt))); d < -time.Second || d > 5*time.Second {
		t.Errorf("published_at %d is %v from now", m.env.PublishedAt, d)
	}
	if m.load.ActiveDecodeBlocks != nil || m.load.ActivePrefillTokens != nil {
		t.Errorf("router-owned fields sent: %+v", m.load)
	}
	if m.load.DPRank > 1 {
		t.Errorf("dp_rank %d of a 2-rank engine", m.load.DPRank)
	}
}

// waitRanks waits until both ranks have reported a count satisfying ok.
func waitRanks(t *testing.T, msgs <-chan received, ok func(uint64) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	done := map[uint32]bool{}
	var seen []string
	for len(done) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("ranks not %s within 30s; messages: %v", what, seen)
		}
		m := next(t, msgs, 30*time.Second)
		seen = append(seen, fmt.Sprintf("%d:%d", m.load.DPRank, kv(t, m)))
		if ok(kv(t, m)) {
			done[m.load.DPRank] = true
		}
	}
}
