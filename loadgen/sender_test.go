package loadgen_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotgate/slotgate/loadgen"
)

// stubSender answers request i with answer(i), after content at 1ms
// steps for a success, and records the requests.
type stubSender struct {
	answer func(ctx context.Context, i int64) loadgen.Answer

	mu   sync.Mutex
	reqs []loadgen.Request
}

func (s *stubSender) Target() string { return "stub://target" }

func (s *stubSender) Send(ctx context.Context, req loadgen.Request) loadgen.Answer {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return s.answer(ctx, req.Index)
}

func (s *stubSender) requests() []loadgen.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// answered is a complete success: tokens messages 1ms apart, with usage.
func answered(status string, tokens int) loadgen.Answer {
	a := loadgen.Answer{Status: status, Success: true, Start: time.Unix(100, 0)}
	for k := range tokens {
		a.Reply.Content(a.Start.Add(time.Duration(k+1) * time.Millisecond))
	}
	a.Reply.Usage(7, tokens)
	a.Reply.End(a.Start.Add(time.Duration(tokens+1) * time.Millisecond))
	return a
}

// senderOptions runs a closed loop of one worker through s.
func senderOptions(s loadgen.Sender, requests int64) loadgen.Options {
	o := options("")
	o.URL, o.Model, o.Concurrency, o.Requests, o.Sender = "", "", 1, requests, s
	return o
}

// TestSenderOutcomes maps each kind of Answer to its outcome, and counts
// only complete successes in the measurements.
func TestSenderOutcomes(t *testing.T) {
	checkLeaks(t)
	answers := []loadgen.Answer{
		answered("OK", 3),
		{Status: "RESOURCE_EXHAUSTED", Start: time.Unix(100, 0)},
		{Status: "OK", Success: true, Err: fmt.Errorf("%w: no end", loadgen.ErrBadResponse)},
		{Status: "OK", Success: true, Err: fmt.Errorf("%w: boom", loadgen.ErrStreamError)},
		{Status: "OK", Success: true, Err: io.ErrUnexpectedEOF},
		{Err: errors.New("connection refused")},
		{}, // a Sender that said nothing
		{Status: "UNAVAILABLE", Err: errors.New("ignored: a refusal is its status")},
	}
	s := &stubSender{answer: func(_ context.Context, i int64) loadgen.Answer { return answers[i] }}
	r := runLoad(t, t.Context(), senderOptions(s, int64(len(answers))))
	want := map[string]int64{"OK": 1, "RESOURCE_EXHAUSTED": 1, "UNAVAILABLE": 1, "bad_response": 1,
		"stream_error": 1, "error": 3}
	if !maps.Equal(r.ByStatus, want) || r.OK != 1 {
		t.Errorf("by_status = %v, ok = %d; want %v, 1", r.ByStatus, r.OK, want)
	}
	if r.TTFT.Count != 1 || r.TTFT.Min != 0.001 || r.ITL.Count != 2 || r.E2E.Max != 0.004 ||
		r.OutputTokens != 3 || r.PromptTokens != 7 {
		t.Errorf("ttft %+v, itl %+v, e2e %+v, output %d, prompt %d; want one 1ms TTFT, two gaps, 4ms E2E, 3 and 7",
			r.TTFT, r.ITL, r.E2E, r.OutputTokens, r.PromptTokens)
	}
	if r.Config.Target != "stub://target" || r.Config.Model != "" {
		t.Errorf("config target %q, model %q; want the Sender's target and no model", r.Config.Target, r.Config.Model)
	}
}

// TestSenderRequests: the Sender gets each request's index, shape and
// stream setting, the same as HTTP requests would carry, and its context
// ends at the timeout, which makes the outcome "timeout".
func TestSenderRequests(t *testing.T) {
	checkLeaks(t)
	s := &stubSender{answer: func(ctx context.Context, i int64) loadgen.Answer {
		if i == 2 {
			<-ctx.Done()
			return loadgen.Answer{Err: ctx.Err()}
		}
		return answered("200", 1)
	}}
	o := senderOptions(s, 3)
	o.Stream, o.Timeout = false, 50*time.Millisecond
	o.PromptTokens, o.MaxTokens = loadgen.FixedDist(6), loadgen.FixedDist(9)
	r := runLoad(t, t.Context(), o)
	if want := map[string]int64{"200": 2, "timeout": 1}; !maps.Equal(r.ByStatus, want) {
		t.Errorf("by_status = %v, want %v", r.ByStatus, want)
	}
	reqs := s.requests()
	slices.SortFunc(reqs, func(a, b loadgen.Request) int { return int(a.Index - b.Index) })
	for i, req := range reqs {
		if req.Index != int64(i) || req.PromptTokens != 6 || req.MaxTokens != 9 || req.Stream ||
			len(strings.Fields(req.Prompt)) != 6 {
			t.Errorf("request %d = %+v", i, req)
		}
	}
	if len(reqs) != 3 {
		t.Errorf("%d requests sent, want 3", len(reqs))
	}
}

// TestSenderRejectsHTTPSettings: with a Sender, the HTTP settings must be
// empty, and the model is optional.
func TestSenderRejectsHTTPSettings(t *testing.T) {
	s := &stubSender{}
	for name, setup := range map[string]func(*loadgen.Options){
		"url":      func(o *loadgen.Options) { o.URL = "http://127.0.0.1:1" },
		"endpoint": func(o *loadgen.Options) { o.Endpoint = loadgen.EndpointChat },
		"api key":  func(o *loadgen.Options) { o.APIKey = "k" },
	} {
		o := senderOptions(s, 1)
		setup(&o)
		if _, err := loadgen.New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
	g, err := loadgen.New(senderOptions(s, 1))
	if err != nil {
		t.Fatalf("New refused a Sender without a model: %v", err)
	}
	if g.Target() != "stub://target" {
		t.Errorf("Target = %q, want the Sender's", g.Target())
	}
}

// TestSenderDefaults: an Answer without Start counts from the call of
// Send, and a complete one without End ends when Send returned.
func TestSenderDefaults(t *testing.T) {
	checkLeaks(t)
	s := &stubSender{answer: func(context.Context, int64) loadgen.Answer {
		return loadgen.Answer{Status: "OK", Success: true}
	}}
	r := runLoad(t, t.Context(), senderOptions(s, 2))
	// A zero Start would make E2E decades long, a zero End negative.
	if r.OK != 2 || r.E2E.Count != 2 || r.E2E.Min < 0 || r.E2E.Max > waitLimit.Seconds() || r.TTFT.Count != 0 {
		t.Errorf("ok %d, e2e %+v, ttft %d samples; want 2 E2E samples within the run and no TTFT", r.OK, r.E2E, r.TTFT.Count)
	}
}
