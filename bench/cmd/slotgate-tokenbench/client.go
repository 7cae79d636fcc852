package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// outcome is how a request ended; each request has exactly one.
type outcome string

const (
	served   outcome = "served"    // 200 and a whole stream, ending with [DONE]
	refused  outcome = "refused"   // any status but 200: slotgate's 529, a 503
	timedOut outcome = "timed_out" // the client's deadline passed first
	failed   outcome = "failed"    // no answer, or a stream that broke off
)

// record is what the client saw of one request.
type record struct {
	Kind    kind
	Outcome outcome
	Status  int
	// TTFT is the time from sending to the first event with text; 0 when
	// none came.
	TTFT time.Duration
	Err  string
}

// sender sends the workload's requests to one base URL.
type sender struct {
	client   *http.Client
	base     string
	seed     uint64
	deadline time.Duration
}

func newSender(base string, seed uint64, deadline time.Duration) *sender {
	tr := &http.Transport{Proxy: nil, MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: time.Minute}
	return &sender{client: &http.Client{Transport: tr}, base: base, seed: seed, deadline: deadline}
}

func (s *sender) close() { s.client.CloseIdleConnections() }

// send sends a's request and reads its stream to the end, within the
// deadline.
func (s *sender) send(ctx context.Context, a arrival) record {
	rec := record{Kind: a.Kind}
	ctx, cancel := context.WithTimeout(ctx, s.deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+a.endpoint(), bytes.NewReader(a.body(s.seed)))
	if err != nil {
		return rec.fail(ctx, err)
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return rec.fail(ctx, err)
	}
	defer resp.Body.Close()
	rec.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		rec.Outcome = refused
		return rec
	}
	first, done, err := readStream(resp.Body)
	if !first.IsZero() {
		rec.TTFT = first.Sub(start)
	}
	switch {
	case err != nil:
		return rec.fail(ctx, err)
	case !done || first.IsZero():
		return rec.fail(ctx, errors.New("the stream ended without text or without [DONE]"))
	}
	rec.Outcome = served
	return rec
}

// fail ends rec as timed out when the deadline passed, else as failed.
func (rec record) fail(ctx context.Context, err error) record {
	rec.Outcome, rec.Err = failed, err.Error()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		rec.Outcome = timedOut
	}
	return rec
}

// readStream reads Server-Sent Events to the end and returns when the
// first event carrying text arrived (a chat delta's content or a
// completion's text; not the chat stream's role-only event) and whether
// [DONE] came.
func readStream(r io.Reader) (first time.Time, done bool, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case data == "[DONE]":
			done = true
		case first.IsZero() && hasText(data):
			first = time.Now()
		}
	}
	if err := sc.Err(); err != nil {
		return first, done, fmt.Errorf("read stream: %w", err)
	}
	return first, done, nil
}

// event is the part of a completion or chat chunk that carries text.
type event struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
}

// hasText says whether the JSON event data carries generated text.
func hasText(data string) bool {
	var e event
	if json.Unmarshal([]byte(data), &e) != nil {
		return false
	}
	for _, c := range e.Choices {
		if c.Text != "" || c.Delta.Content != "" {
			return true
		}
	}
	return false
}
