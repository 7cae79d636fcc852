package report_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/load/report"
)

func sample() *report.Snapshot {
	return &report.Snapshot{
		Seq: 7, At: time.Date(2026, 12, 2, 21, 0, 0, 123e6, time.UTC), Busy: true,
		Epoch: 18446744073709551557, TTL: 3 * time.Second, // the largest 64-bit prime: no float64 holds it
		Engine: report.Engine{Dialect: "vllm", ScrapedAt: time.Date(2026, 12, 2, 20, 59, 59, 0, time.UTC)},
		Requests: report.Requests{InFlight: 3, Queued: 1, Limit: 8, QueueLimit: 16, WaitingLimit: 6, Prefilling: 2,
			PrefillTokens: 1800, QueuedTokens: 700, PrefillTokenLimit: 8192, QueueTokenLimit: 65536,
			Ranks: []report.RankRequests{
				{DPRank: 0, InFlight: 2, Queued: 1, Limit: 4, QueueLimit: 8, WaitingLimit: 3, Prefilling: 2,
					PrefillTokens: 1800, QueuedTokens: 700, PrefillTokenLimit: 4096, QueueTokenLimit: 32768},
				{DPRank: 1, InFlight: 1, Queued: 0, Limit: 4, QueueLimit: 8, WaitingLimit: 3, Prefilling: 0,
					PrefillTokenLimit: 4096, QueueTokenLimit: 32768},
			}},
		Thresholds: report.Thresholds{ActiveDecodeBlocks: ptr(0.85)},
		Ranks: []report.Rank{
			{DPRank: 0, Busy: true, KVTotalBlocks: f(1000, report.SourceEngine), KVUsedBlocks: f(900, report.SourceEngine),
				ActiveDecodeBlocks: f(880, report.SourceSlotgate), ActivePrefillTokens: f(40, report.SourceSlotgate),
				MaxNumBatchedTokens: f(8192, report.SourceStatic)},
			{DPRank: 1, Busy: true, KVTotalBlocks: f(1000, report.SourceEngine), ActivePrefillTokens: f(2, report.SourceSlotgate)},
		},
	}
}

// TestJSONShape pins the wire form: plain numbers, null for unknown, and
// the sources of the known ones.
func TestJSONShape(t *testing.T) {
	b, err := json.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	rank0 := m["ranks"].([]any)[0].(map[string]any)
	rank1 := m["ranks"].([]any)[1].(map[string]any)
	reqs := m["requests"].(map[string]any)
	checks := []struct {
		what      string
		got, want any
	}{
		{"seq", m["seq"], 7.0},
		{"at", m["at"], "2026-12-02T21:00:00.123Z"},
		{"epoch", m["epoch"], "18446744073709551557"},
		{"ttl_ms", m["ttl_ms"], 3000.0},
		{"busy", m["busy"], true},
		{"engine.scraped_at", m["engine"].(map[string]any)["scraped_at"], "2026-12-02T20:59:59Z"},
		{"requests.in_flight", reqs["in_flight"], 3.0},
		{"requests.queued", reqs["queued"], 1.0},
		{"requests.limit", reqs["limit"], 8.0},
		{"requests.queue_limit", reqs["queue_limit"], 16.0},
		{"requests.waiting_limit", reqs["waiting_limit"], 6.0},
		{"requests.prefilling", reqs["prefilling"], 2.0},
		{"requests.prefill_tokens", reqs["prefill_tokens"], 1800.0},
		{"requests.queued_tokens", reqs["queued_tokens"], 700.0},
		{"requests.prefill_token_limit", reqs["prefill_token_limit"], 8192.0},
		{"requests.queue_token_limit", reqs["queue_token_limit"], 65536.0},
		{"requests.ranks", len(reqs["ranks"].([]any)), 2},
		{"thresholds decode", m["thresholds"].(map[string]any)["active_decode_blocks_threshold"], 0.85},
		{"thresholds tokens", m["thresholds"].(map[string]any)["active_prefill_tokens_threshold"], nil},
		{"rank0 kv_used_blocks", rank0["kv_used_blocks"], 900.0},
		{"rank0 source", rank0["sources"].(map[string]any)["max_num_batched_tokens"], "static"},
		{"rank1 kv_used_blocks", rank1["kv_used_blocks"], nil},
		{"rank1 sources", len(rank1["sources"].(map[string]any)), 2},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if _, ok := rank1["kv_used_blocks"]; !ok {
		t.Error("an unknown count must be present as null, not absent")
	}
	// Each rank's admission state, every field distinct so that a swap
	// shows.
	s := sample()
	s.Requests.Ranks = []report.RankRequests{
		{DPRank: 1, InFlight: 2, Queued: 3, Limit: 4, QueueLimit: 5, WaitingLimit: 6, Prefilling: 7,
			PrefillTokens: 8, QueuedTokens: 9, PrefillTokenLimit: 10, QueueTokenLimit: 11},
	}
	b, err = json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Requests struct {
			Ranks []map[string]any `json:"ranks"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"dp_rank": 1.0, "in_flight": 2.0, "queued": 3.0, "limit": 4.0, "queue_limit": 5.0,
		"waiting_limit": 6.0, "prefilling": 7.0, "prefill_tokens": 8.0, "queued_tokens": 9.0, "prefill_token_limit": 10.0,
		"queue_token_limit": 11.0}
	if len(got.Requests.Ranks) != 1 || !maps.Equal(got.Requests.Ranks[0], want) {
		t.Errorf("requests.ranks = %v, want [%v]", got.Requests.Ranks, want)
	}
}

// TestJSONRanksOnlyPerRank: "ranks" is left out of "requests" when the
// limits are for the whole engine, and the new counts are there as 0
// when W is unset.
func TestJSONRanksOnlyPerRank(t *testing.T) {
	s := sample()
	s.Requests = report.Requests{InFlight: 1, Limit: 8}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Requests map[string]any `json:"requests"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Requests["ranks"]; ok {
		t.Errorf("requests = %v: ranks present without limits per rank", m.Requests)
	}
	if m.Requests["waiting_limit"] != 0.0 || m.Requests["prefilling"] != 0.0 {
		t.Errorf("requests = %v: want waiting_limit and prefilling 0", m.Requests)
	}
	var back report.Snapshot
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Requests.Ranks != nil {
		t.Errorf("read back Ranks %v, want nil", back.Requests.Ranks)
	}
}

// TestJSONReadsOlderSidecar: a sidecar from before W and per-rank
// requests sends none of them; they read as 0 and nil.
func TestJSONReadsOlderSidecar(t *testing.T) {
	var s report.Snapshot
	in := `{"seq":3,"requests":{"in_flight":2,"queued":1,"limit":8,"queue_limit":4},"ranks":[{"dp_rank":0}]}`
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	want := report.Requests{InFlight: 2, Queued: 1, Limit: 8, QueueLimit: 4}
	if s.Requests.InFlight != want.InFlight || s.Requests.Queued != want.Queued || s.Requests.Limit != want.Limit ||
		s.Requests.QueueLimit != want.QueueLimit || s.Requests.WaitingLimit != 0 || s.Requests.Prefilling != 0 ||
		s.Requests.PrefillTokens != 0 || s.Requests.QueuedTokens != 0 || s.Requests.PrefillTokenLimit != 0 ||
		s.Requests.QueueTokenLimit != 0 || s.Requests.Ranks != nil {
		t.Errorf("requests = %+v, want %+v", s.Requests, want)
	}
	if s.Epoch != 0 || s.TTL != 0 {
		t.Errorf("epoch %d, TTL %v; want 0 and 0 from a sidecar without them", s.Epoch, s.TTL)
	}
}

// TestSameLoadRequests: every admission count is part of the load, so
// that a change to any of them is published.
func TestSameLoadRequests(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*report.Requests)
	}{
		{"in flight", func(r *report.Requests) { r.InFlight++ }},
		{"queued", func(r *report.Requests) { r.Queued++ }},
		{"limit", func(r *report.Requests) { r.Limit++ }},
		{"queue limit", func(r *report.Requests) { r.QueueLimit++ }},
		{"waiting limit", func(r *report.Requests) { r.WaitingLimit++ }},
		{"prefilling", func(r *report.Requests) { r.Prefilling-- }},
		{"prefill tokens", func(r *report.Requests) { r.PrefillTokens++ }},
		{"queued tokens", func(r *report.Requests) { r.QueuedTokens-- }},
		{"prefill token limit", func(r *report.Requests) { r.PrefillTokenLimit++ }},
		{"queue token limit", func(r *report.Requests) { r.QueueTokenLimit++ }},
		{"a rank's queued tokens", func(r *report.Requests) { r.Ranks[0].QueuedTokens++ }},
		{"a rank's prefill token limit", func(r *report.Requests) { r.Ranks[1].PrefillTokenLimit-- }},
		{"a rank's prefilling", func(r *report.Requests) { r.Ranks[1].Prefilling++ }},
		{"a rank's waiting limit", func(r *report.Requests) { r.Ranks[0].WaitingLimit++ }},
		{"a rank more", func(r *report.Requests) { r.Ranks = append(r.Ranks, report.RankRequests{DPRank: 2}) }},
		{"no ranks", func(r *report.Requests) { r.Ranks = nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := sample(), sample()
			if !a.SameLoad(b) {
				t.Fatal("two samples differ")
			}
			tt.change(&b.Requests)
			if a.SameLoad(b) || b.SameLoad(a) {
				t.Errorf("SameLoad after changing the %s", tt.name)
			}
		})
	}
	a, b := sample(), sample()
	a.Requests.Ranks, b.Requests.Ranks = nil, []report.RankRequests{}
	if !a.SameLoad(b) {
		t.Error("nil and empty Ranks differ")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	in := sample()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out report.Snapshot
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.SameLoad(in) || out.Seq != in.Seq || !out.At.Equal(in.At) || !out.Engine.ScrapedAt.Equal(in.Engine.ScrapedAt) ||
		out.Epoch != in.Epoch || out.TTL != in.TTL {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, *in)
	}
}

func TestUnmarshalRejectsGarbage(t *testing.T) {
	var s report.Snapshot
	for _, in := range []string{
		`[]`, `{"seq":"x"}`, `{"ranks":[{"kv_total_blocks":"many"}]}`,
		`{"epoch":5}`, `{"epoch":"x"}`, `{"epoch":"-1"}`, `{"epoch":"18446744073709551616"}`, `{"epoch":"1.5"}`,
		`{"ttl_ms":-1}`, `{"ttl_ms":9223372036855}`, `{"ttl_ms":1.5}`, `{"ttl_ms":"3000"}`,
		`{"requests":{"prefill_tokens":"many"}}`, `{"requests":{"queued_tokens":-0.5}}`,
		`{"requests":{"prefill_token_limit":true}}`, `{"requests":{"ranks":[{"queue_token_limit":[]}]}}`,
	} {
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("Unmarshal(%s) succeeded: %+v", in, s)
		}
	}
}

// TestHTTPEndpoints: GET /v1/load answers the latest snapshot; the
// stream sends it at once as an SSE event named load with its Seq as id.
func TestHTTPEndpoints(t *testing.T) {
	src := &source{}
	src.inFlight.Store(5)
	hub := newHub(t, src, nil)
	srv := httptest.NewServer(report.NewHandler(hub))
	t.Cleanup(srv.Close)

	resp, err := http.Get(srv.URL + report.PathLoad)
	if err != nil {
		t.Fatal(err)
	}
	var s report.Snapshot
	err = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()
	if err != nil || resp.Header.Get("Content-Type") != "application/json" || s.Seq != 1 || s.Requests.InFlight != 5 {
		t.Fatalf("GET %s: %v, %q, %+v", report.PathLoad, err, resp.Header.Get("Content-Type"), s)
	}

	resp, err = http.Get(srv.URL + report.PathStream)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("stream Content-Type = %q", ct)
	}
	ev, err := readEvent(bufio.NewReader(resp.Body))
	if err != nil {
		t.Fatal(err)
	}
	if ev["event"] != "load" || ev["id"] != "1" {
		t.Errorf("event = %v, want event load, id 1", ev)
	}
	if err := json.Unmarshal([]byte(ev["data"]), &s); err != nil || s.Requests.InFlight != 5 {
		t.Errorf("event data: %v, %+v", err, s)
	}
}

// readEvent reads one SSE event's fields.
func readEvent(r *bufio.Reader) (map[string]string, error) {
	ev := map[string]string{}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			if len(ev) == 0 {
				continue
			}
			return ev, nil
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, errors.New("malformed line " + line)
		}
		ev[k] = v
	}
}

func ptr[T any](v T) *T { return &v }

func f(n int64, src report.Source) report.Field { return report.Field{N: n, Source: src} }
