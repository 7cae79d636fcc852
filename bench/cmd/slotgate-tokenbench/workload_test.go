package main

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func testWorkload() workload {
	return workload{Seed: 7, Rate: 50, Duration: 200 * time.Second, HugeFraction: 0.02,
		ShortPrompt: span{20, 80}, ShortOutput: span{16, 32}, HugePrompt: span{6000, 16000}, HugeOutput: 16}
}

func TestPlanIsAFunctionOfTheWorkload(t *testing.T) {
	w := testWorkload()
	a, b := plan(w), plan(w)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two plans of one workload differ")
	}
	w.Seed++
	if reflect.DeepEqual(a, plan(w)) {
		t.Fatal("another seed gave the same plan")
	}
	if string(a[3].body(7)) != string(b[3].body(7)) {
		t.Error("two bodies of one arrival differ")
	}
}

func TestPlanMixAndShapes(t *testing.T) {
	tests := []struct {
		name     string
		fraction float64
		lo, hi   float64 // bounds of the huge share, about ±3 standard deviations
	}{
		{"2% huge", 0.02, 0.016, 0.024},
		{"half huge", 0.5, 0.48, 0.52},
		{"none huge", 0, 0, 0},
		{"all huge", 1, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := testWorkload()
			w.HugeFraction = tt.fraction
			as := plan(w)
			// 10,000 arrivals expected: Poisson, so within a few percent.
			if n := len(as); n < 9700 || n > 10300 {
				t.Errorf("%d arrivals at 50/s for 200 s, want about 10000", n)
			}
			share := float64(countKind(as, kindHuge)) / float64(len(as))
			if share < tt.lo || share > tt.hi {
				t.Errorf("huge share %.4f, want %.3f to %.3f", share, tt.lo, tt.hi)
			}
			var last time.Duration
			for _, a := range as {
				if a.At < last || a.At >= w.Duration {
					t.Fatalf("arrival %d at %v after %v, or past %v", a.Index, a.At, last, w.Duration)
				}
				last = a.At
				checkShape(t, w, a)
			}
		})
	}
}

func checkShape(t *testing.T, w workload, a arrival) {
	t.Helper()
	prompt, out := w.ShortPrompt, w.ShortOutput
	if a.Kind == kindHuge {
		prompt, out = w.HugePrompt, span{w.HugeOutput, w.HugeOutput}
	}
	if a.PromptTokens < prompt.Min || a.PromptTokens > prompt.Max || a.MaxTokens < out.Min || a.MaxTokens > out.Max {
		t.Fatalf("%s arrival %d: prompt %d, max_tokens %d; want %v and %v", a.Kind, a.Index, a.PromptTokens, a.MaxTokens, prompt, out)
	}
}

func TestBodies(t *testing.T) {
	tests := []struct {
		name     string
		a        arrival
		endpoint string
		check    func(t *testing.T, req map[string]any)
	}{
		{"huge: exactly PromptTokens token ids", arrival{Index: 1, Kind: kindHuge, PromptTokens: 6000, MaxTokens: 16}, "/v1/completions",
			func(t *testing.T, req map[string]any) {
				if ids, _ := req["prompt"].([]any); len(ids) != 6000 {
					t.Errorf("prompt has %d ids, want 6000", len(ids))
				}
			}},
		{"short: a chat message", arrival{Index: 2, Kind: kindShort, PromptTokens: 30, MaxTokens: 20}, "/v1/chat/completions",
			func(t *testing.T, req map[string]any) {
				msgs, _ := req["messages"].([]any)
				if len(msgs) != 1 {
					t.Fatalf("messages: %v", req["messages"])
				}
				if s, _ := msgs[0].(map[string]any)["content"].(string); len(s) != 30*4-1 {
					t.Errorf("content of %d characters, want 30 words of 3 letters: %q", len(s), s)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.endpoint(); got != tt.endpoint {
				t.Errorf("endpoint %s, want %s", got, tt.endpoint)
			}
			var req map[string]any
			if err := json.Unmarshal(tt.a.body(1), &req); err != nil {
				t.Fatal(err)
			}
			if req["stream"] != true || req["ignore_eos"] != true || req["max_tokens"] != float64(tt.a.MaxTokens) {
				t.Errorf("stream %v, ignore_eos %v, max_tokens %v", req["stream"], req["ignore_eos"], req["max_tokens"])
			}
			tt.check(t, req)
		})
	}
}
