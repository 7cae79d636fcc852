package loadgen

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// fakeClock advances a second at each call, so each chunk's time tells
// which call timed it.
func fakeClock() func() time.Time {
	t := time.Unix(0, 0)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

func TestReadStream(t *testing.T) {
	const (
		text  = `data: {"choices":[{"text":"x"}]}`
		delta = `data: {"choices":[{"delta":{"content":"x"}}]}`
		usage = `data: {"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7}}`
		done  = "data: [DONE]"
	)
	for _, tc := range []struct {
		name      string
		body      string
		first     int64 // second of the first text; 0 for none
		gaps      []time.Duration
		end       int64
		output    int
		prompt    int
		wantError error // errors.Is target; nil for success
	}{
		{"completions with usage", lines(text, "", text, "", text, "", usage, "", done, ""),
			1, secs(2, 2), 9, 7, 11, nil},
		{"chat, role chunk first, no usage", lines(`data: {"choices":[{"delta":{"role":"assistant","content":""}}]}`, delta, delta),
			2, secs(1), 4, 2, 0, nil},
		{"no space after data:, CRLF lines", "data:" + text[5:] + "\r\n\r\ndata:" + text[5:] + "\r\n\r\ndata:[DONE]\r\n",
			1, secs(2), 5, 2, 0, nil},
		{"comments, event and id lines skipped", lines(": ping", "event: message", "id: 1", text, "retry: 10", text, done),
			4, secs(2), 7, 2, 0, nil},
		{"reasoning counts as output", lines(`data: {"choices":[{"delta":{"reasoning_content":"r"}}]}`, delta, done),
			1, secs(1), 3, 2, 0, nil},
		{"continuous usage: the last one wins", lines(`data: {"choices":[{"text":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
			`data: {"choices":[{"text":"x"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, done),
			1, secs(1), 3, 2, 3, nil},
		{"empty stream", lines(done), 0, nil, 1, 0, 0, nil},
		{"ends without [DONE]", lines(text, text), 1, secs(1), 3, 2, 0, nil},
		{"data after [DONE] ignored", lines(text, done, text), 1, nil, 2, 1, 0, nil},
		{"error event", lines(text, `data: {"error":{"message":"boom","code":500}}`, done), 1, nil, 0, 1, 0, ErrStreamError},
		{"old error object", lines(text, `data: {"object":"error","message":"boom"}`), 1, nil, 0, 1, 0, ErrStreamError},
		{"null error is no error", lines(`data: {"choices":[{"text":"x"}],"error":null}`, done), 1, nil, 2, 1, 0, nil},
		{"not json", lines(text, "data: {oops"), 1, nil, 0, 1, 0, ErrBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := readReply("text/event-stream; charset=utf-8", strings.NewReader(tc.body), fakeClock())
			if tc.wantError != nil {
				if !errors.Is(err, tc.wantError) {
					t.Fatalf("error = %v, want %v", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatalf("readReply: %v", err)
			}
			checkReply(t, r, tc.first, tc.gaps, tc.end, tc.output, tc.prompt)
		})
	}
}

func TestReadWhole(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		first                   int64
		output, prompt          int
		wantError               error
	}{
		{"completion", "application/json", `{"choices":[{"text":"abc"}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`, 1, 3, 5, nil},
		{"chat", "", `{"choices":[{"message":{"role":"assistant","content":"abc"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}}`, 1, 3, 5, nil},
		{"no usage", "application/json", `{"choices":[{"text":"abc"}]}`, 1, 1, 0, nil},
		{"empty text", "application/json", `{"choices":[{"text":""}]}`, 0, 0, 0, nil},
		{"error body", "application/json", `{"error":{"message":"x"}}`, 0, 0, 0, ErrStreamError},
		{"not json", "application/json", `<html>`, 0, 0, 0, ErrBadResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := readReply(tc.contentType, strings.NewReader(tc.body), fakeClock())
			if tc.wantError != nil || err != nil {
				if !errors.Is(err, tc.wantError) || tc.wantError == nil {
					t.Fatalf("error = %v, want %v", err, tc.wantError)
				}
				return
			}
			checkReply(t, r, tc.first, nil, 1, tc.output, tc.prompt)
		})
	}
}

// TestReadStreamFailure: a body that breaks off is an error of its own,
// neither a stream error nor a bad response.
func TestReadStreamFailure(t *testing.T) {
	body := io.MultiReader(strings.NewReader("data: {\"choices\":[{\"text\":\"x\"}]}\n\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	_, err := readReply("text/event-stream", body, fakeClock())
	if !errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, ErrStreamError) || errors.Is(err, ErrBadResponse) {
		t.Errorf("error = %v, want the read error alone", err)
	}
}

func checkReply(t *testing.T, r Reply, first int64, gaps []time.Duration, end int64, output, prompt int) {
	t.Helper()
	if first == 0 && !r.first.IsZero() || first != 0 && r.first.Unix() != first {
		t.Errorf("first text at %v, want second %d", r.first.Unix(), first)
	}
	if !slices.Equal(r.gaps, gaps) {
		t.Errorf("gaps = %v, want %v", r.gaps, gaps)
	}
	if r.end.Unix() != end {
		t.Errorf("end at second %d, want %d", r.end.Unix(), end)
	}
	if r.outputTokens() != output || r.promptTokens() != prompt {
		t.Errorf("output, prompt tokens = %d, %d; want %d, %d", r.outputTokens(), r.promptTokens(), output, prompt)
	}
}

func lines(l ...string) string { return strings.Join(l, "\n") + "\n" }

func secs(v ...int) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x) * time.Second
	}
	return out
}
