package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The waiting limit's scenario runs against enginesim, whose first token
// comes only after the prompt is computed: a long prompt holds its request
// in prefill for a while. Two long requests arrive first, then four short
// ones. The engine is slowed (speed-up 0.25) and its prefill chunked (512
// tokens a step), so a long prompt's prefill takes over a second and each
// step that follows a few tens of milliseconds.
const (
	longPromptTokens = 6000
	longMaxTokens    = 60
	shortRequests    = 4
)

var enginesimSlow = []string{"--max-num-seqs", "8", "--max-num-batched-tokens", "512", "--speedup-ratio", "0.25"}

// stream is what a streaming client saw of one completion.
type stream struct {
	id               string
	status           int
	start            time.Time
	firstToken, done time.Time
	err              error
}

func (s stream) ttft() time.Duration { return s.firstToken.Sub(s.start) }

// streamCompletion sends a streamed completion and records when the first
// event with text arrived and when the stream ended.
func streamCompletion(ctx context.Context, url, id, prompt string, maxTokens int) stream {
	s := stream{id: id, start: time.Now()}
	body := fmt.Sprintf(`{"prompt":%s,"max_tokens":%d,"ignore_eos":true,"stream":true}`, prompt, maxTokens)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
	if err != nil {
		s.err = err
		return s
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.err = err
		return s
	}
	defer resp.Body.Close()
	s.status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		s.done = time.Now()
		return s
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if s.firstToken.IsZero() && strings.HasPrefix(line, "data: {") && strings.Contains(line, `"text":"`) &&
			!strings.Contains(line, `"text":""`) {
			s.firstToken = time.Now()
		}
	}
	s.err, s.done = sc.Err(), time.Now()
	return s
}

// longPrompt is a prompt of n token ids.
func longPrompt(n int) string {
	return "[" + strings.Repeat("1,", n-1) + "1]"
}

// waitingRun is one run of the scenario under one configuration.
type waitingRun struct {
	long, short []stream
	// engineMax is the most requests the engine had before their first
	// token at once, by its own exact count.
	engineMax float64
	sg        *sidecar
}

// runWaitingScenario starts enginesim and slotgate with args, sends the
// two long requests, waits until slotgate admitted them, then sends the
// short ones; check runs once the short ones wait (or are admitted) and
// before anything ends.
func runWaitingScenario(t *testing.T, check func(sg *sidecar), args ...string) waitingRun {
	t.Helper()
	eng := startEnginesim(t, enginesimSlow...)
	sg := start(t, eng, nil, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	run := waitingRun{sg: sg}
	run.long, run.short = make([]stream, 2), make([]stream, shortRequests)
	for i := range run.long {
		wg.Go(func() {
			run.long[i] = streamCompletion(ctx, sg.proxy, "long-"+strconv.Itoa(i), longPrompt(longPromptTokens), longMaxTokens)
		})
		// Arrival order is part of the scenario: each long request is
		// admitted before the next request is sent.
		eventually(t, "long request "+strconv.Itoa(i)+" admitted", func() bool {
			return sg.metric("dynamo_backend_admission_engine_request_count") == float64(i+1)
		})
	}
	for i := range run.short {
		wg.Go(func() { run.short[i] = streamCompletion(ctx, sg.proxy, "short-"+strconv.Itoa(i), `"hi"`, 2) })
	}
	eventually(t, "the short requests to arrive", func() bool {
		return sg.metric("dynamo_backend_admission_request_receive_total") == float64(2+shortRequests)
	})
	if check != nil {
		check(sg)
	}
	wg.Wait()
	for _, s := range slices.Concat(run.long, run.short) {
		if s.err != nil || s.status != http.StatusOK || s.firstToken.IsZero() {
			t.Fatalf("%s: status %d, error %v, first token %v", s.id, s.status, s.err, s.firstToken)
		}
	}
	_, text := get(t, eng+"/enginesim/metrics")
	run.engineMax = promValue(t, text, "enginesim_requests_before_first_token_max")
	return run
}

// promValue reads one unlabelled sample from Prometheus text.
func promValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("no %s in:\n%s", name, text)
	return 0
}

// firstLongDone is when the first long request's stream ended.
func (r waitingRun) firstLongDone() time.Time {
	if r.long[1].done.Before(r.long[0].done) {
		return r.long[1].done
	}
	return r.long[0].done
}

func ttfts(ss []stream) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = s.ttft().Round(time.Millisecond)
	}
	return out
}

// TestWaitingLimit runs the scenario with N=8, W=2, Q=4 against two
// configurations without a waiting limit:
//
//   - N=2, Q=4: a cap on all requests small enough to keep prefill at 2.
//     It does keep prefill at 2, but the short requests wait for whole
//     generations: none streams before a long request ends.
//   - N=8, Q=4: a cap on all requests sized for the batch. Nothing waits,
//     and the engine has all six requests in prefill at once.
//
// With W=2 the engine never has more than 2 requests in prefill, and the
// short requests stream as soon as the long ones' prompts are computed,
// before either long request ends. The 1.7 metrics are checked while the
// short requests wait and at the end.
func TestWaitingLimit(t *testing.T) {
	t.Parallel()
	withW := runWaitingScenario(t, func(sg *sidecar) {
		want := map[string]float64{
			"dynamo_backend_admission_engine_request_count": 2,
			"dynamo_backend_admission_engine_wait_count":    2,
			"dynamo_backend_admission_request_queue_count":  shortRequests,
			"dynamo_backend_admission_engine_wait_limit":    2,
			"dynamo_backend_admission_engine_request_limit": 8,
			"dynamo_backend_admission_request_queue_limit":  4,
			"dynamo_request_queue":                          shortRequests,
			"dynamo_engine_request":                         2,
		}
		for name, v := range want {
			if got := sg.metric(name); got != v {
				t.Errorf("while the short requests wait: %s = %v, want %v", name, got, v)
			}
		}
		if got := sg.metric("dynamo_backend_admission_request_admit_total", "source", "direct"); got != 2 {
			t.Errorf("admit_total{direct} = %v, want 2", got)
		}
		// The queue is full: the next request is refused at once.
		r := post(context.Background(), http.DefaultClient, sg.proxy, "refused", `{"prompt":"x","max_tokens":1}`)
		checkOverload(t, r, 529, "Server overloaded: worker at capacity")
		if got := sg.metric("dynamo_backend_admission_rejection_total", "reason", "queue_full"); got != 1 {
			t.Errorf("rejection_total{queue_full} = %v, want 1", got)
		}
	}, "--engine-request-limit", "8", "--engine-request-waiting-limit", "2", "--request-queue-limit", "4")
	t.Logf("N=8 W=2 Q=4: engine's most requests in prefill %v; long TTFT %v; short TTFT %v",
		withW.engineMax, ttfts(withW.long), ttfts(withW.short))
	if withW.engineMax > 2 {
		t.Errorf("with W=2 the engine had %v requests in prefill at once", withW.engineMax)
	}
	for _, s := range withW.short {
		if !s.firstToken.Before(withW.firstLongDone()) {
			t.Errorf("with W=2, %s streamed only after a long request ended", s.id)
		}
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"dynamo_backend_admission_request_receive_total", nil, 2 + shortRequests + 1},
		{"dynamo_backend_admission_request_admit_total", []string{"source", "direct"}, 2},
		{"dynamo_backend_admission_request_admit_total", []string{"source", "queue"}, shortRequests},
		{"dynamo_backend_admission_rejection_total", []string{"reason", "queue_full"}, 1},
		{"dynamo_backend_admission_cancellation_total", nil, 0},
		{"dynamo_backend_admission_engine_request_count", nil, 0},
		{"dynamo_backend_admission_engine_wait_count", nil, 0},
		{"dynamo_backend_admission_request_queue_count", nil, 0},
	} {
		name := c.name + fmt.Sprint(c.labels)
		eventually(t, name+" at the end", func() bool { return withW.sg.metric(c.name, c.labels...) == c.want })
	}

	smallN := runWaitingScenario(t, nil, "--engine-request-limit", "2", "--request-queue-limit", "4")
	t.Logf("N=2 Q=4: engine's most requests in prefill %v; long TTFT %v; short TTFT %v",
		smallN.engineMax, ttfts(smallN.long), ttfts(smallN.short))
	for _, s := range smallN.short {
		if s.firstToken.Before(smallN.firstLongDone()) {
			t.Errorf("with N=2, %s streamed before any long request ended", s.id)
		}
	}

	bigN := runWaitingScenario(t, nil, "--engine-request-limit", "8", "--request-queue-limit", "4")
	t.Logf("N=8 Q=4: engine's most requests in prefill %v; long TTFT %v; short TTFT %v",
		bigN.engineMax, ttfts(bigN.long), ttfts(bigN.short))
	if bigN.engineMax != 2+shortRequests {
		t.Errorf("with N=8 alone the engine had at most %v requests in prefill, want all %d", bigN.engineMax, 2+shortRequests)
	}
}

// TestWaitingLimitCancelWhileQueued: with only a waiting limit, a request
// queued behind one in prefill whose client leaves is dropped from the
// queue at once (Dynamo #13095), never reaches the engine, and counts as a
// cancellation, not a rejection.
func TestWaitingLimitCancelWhileQueued(t *testing.T) {
	t.Parallel()
	eng := newEngine(t)
	eng.hold() // the engine answers nothing: the holder stays in prefill
	sg := start(t, eng.url(), map[string]string{"DYN_BACKEND_ADMISSION_ENGINE_REQUEST_WAITING_LIMIT": "1"})
	holder := make(chan result, 1)
	go func() { holder <- post(context.Background(), http.DefaultClient, sg.proxy, "holder", "{}") }()
	eng.waitInFlight(t, 1)

	conn := rawRequest(t, sg.proxy, "leaver")
	eventually(t, "the leaver queued", func() bool {
		return sg.metric("dynamo_backend_admission_request_queue_count") == 1
	})
	if got := sg.metric("dynamo_backend_admission_request_queue_limit"); got != 16 {
		t.Errorf("request_queue_limit = %v, want the default 16", got)
	}
	conn.Close()
	eventually(t, "the queue to empty", func() bool {
		return sg.metric("dynamo_backend_admission_request_queue_count") == 0
	})
	if got := sg.metric("dynamo_backend_admission_cancellation_total"); got != 1 {
		t.Errorf("cancellation_total = %v, want 1", got)
	}
	if got := sg.metric("dynamo_backend_admission_rejection_total", "reason", "queue_full"); got != 0 {
		t.Errorf("rejection_total{queue_full} = %v, want 0", got)
	}
	eng.release()
	if h := <-holder; h.status != http.StatusOK {
		t.Fatalf("holder: status %d", h.status)
	}
	_, _, seen, _ := eng.stats()
	if slices.Contains(seen, "leaver") {
		t.Errorf("the engine received a request whose client had left: %v", seen)
	}
	eventually(t, "the holder's places freed", func() bool {
		return sg.metric("dynamo_backend_admission_engine_wait_count") == 0 &&
			sg.metric("dynamo_backend_admission_engine_request_count") == 0
	})
}

// TestPerRankLimits: with --per-rank-limits each rank has its own N and
// queue. Unpinned requests go to the rank with the most room and the
// engine is told which; a pinned one takes its rank's places, queuing when
// they are taken though another rank has room; a rank the engine does not
// have is a bad request.
func TestPerRankLimits(t *testing.T) {
	t.Parallel()
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--per-rank-limits", "--data-parallel-size", "2",
		"--engine-request-limit", "1", "--request-queue-limit", "1")
	results := make(chan result, 3)
	send := func(id, rank string) { go func() { results <- postRank(sg.proxy, id, rank) }() }
	send("a", "")
	eng.waitInFlight(t, 1)
	send("b", "")
	eng.waitInFlight(t, 2)
	if ra, rb := eng.rankOf("a"), eng.rankOf("b"); ra == rb || ra == "" || rb == "" {
		t.Errorf("unpinned requests went to ranks %q and %q, want one on each", ra, rb)
	}
	pinned := eng.rankOf("a")
	send("c", pinned) // its rank is full: it queues
	eventually(t, "the pinned request queued", func() bool { return sg.metric("dynamo_request_queue") == 1 })

	// The pinned rank's queue is full too; the other rank's queue is not.
	r := postRank(sg.proxy, "d", pinned)
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkOverload(t, r, 529, "Server overloaded: worker at capacity")
	if r = postRank(sg.proxy, "e", "7"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "rank 7") {
		t.Errorf("rank 7: %d %s %v, want 400 naming the rank", r.status, r.body, r.err)
	}
	for name, want := range map[string]float64{
		"dynamo_backend_admission_engine_request_limit": 2, // N per rank, 2 ranks
		"dynamo_backend_admission_request_queue_limit":  2,
		"dynamo_backend_admission_engine_request_count": 2,
	} {
		if got := sg.metric(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	eng.release()
	for range 3 {
		if r := <-results; r.err != nil || r.status != http.StatusOK {
			t.Errorf("status %d, error %v", r.status, r.err)
		}
	}
	if got := eng.rankOf("c"); got != pinned {
		t.Errorf("the pinned request reached the engine with rank %q, want %q", got, pinned)
	}
}

// postRank sends a completion with id as X-Request-Id, pinned to rank
// unless it is empty.
func postRank(url, id, rank string) result {
	req, err := http.NewRequest(http.MethodPost, url+"/v1/completions", strings.NewReader("{}"))
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("X-Request-Id", id)
	if rank != "" {
		req.Header.Set("X-Data-Parallel-Rank", rank)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// TestLimitsAtRunTime: POST /limits raises N while a request waits, which
// admits it at once; the change is logged and the gauges follow; a bad
// body changes nothing.
func TestLimitsAtRunTime(t *testing.T) {
	t.Parallel()
	eng := newEngine(t)
	eng.hold()
	sg := start(t, eng.url(), nil, "--engine-request-limit", "1", "--request-queue-limit", "2")
	results := make(chan result, 2)
	go func() { results <- post(context.Background(), http.DefaultClient, sg.proxy, "first", "{}") }()
	eng.waitInFlight(t, 1)
	go func() { results <- post(context.Background(), http.DefaultClient, sg.proxy, "second", "{}") }()
	eventually(t, "the second request queued", func() bool { return sg.metric("dynamo_request_queue") == 1 })

	status, body := postJSON(t, sg.admin+"/limits", `{"engine_request_limit":"two"}`)
	if status != http.StatusUnprocessableEntity || sg.metric("dynamo_request_queue") != 1 {
		t.Errorf("a bad body: %d %s, queue %v; want 422 and nothing changed", status, body, sg.metric("dynamo_request_queue"))
	}
	status, body = postJSON(t, sg.admin+"/limits", `{"engine_request_limit":2,"engine_request_waiting_limit":5}`)
	want := `{"engine_request_limit":2,"engine_request_waiting_limit":5,"request_queue_limit":2,` +
		`"engine_prefill_token_limit":null,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}`
	if status != http.StatusOK || strings.TrimSpace(body) != want {
		t.Fatalf("POST /limits: %d %s, want 200 %s", status, body, want)
	}
	eng.waitInFlight(t, 2) // the waiter was admitted by the change alone
	sg.log.WaitFor(t, `"msg":"admission limits changed"`, waitLimit)
	for name, v := range map[string]float64{
		"slotgate_engine_request_limit":                 2,
		"dynamo_backend_admission_engine_request_limit": 2,
		"dynamo_backend_admission_engine_wait_limit":    5,
		"dynamo_request_queue":                          0,
	} {
		if got := sg.metric(name); got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	eng.release()
	for range 2 {
		if r := <-results; r.status != http.StatusOK {
			t.Errorf("status %d, error %v", r.status, r.err)
		}
	}
	if _, got := get(t, sg.admin+"/limits"); strings.TrimSpace(got) != want {
		t.Errorf("GET /limits = %s, want %s", got, want)
	}
}
