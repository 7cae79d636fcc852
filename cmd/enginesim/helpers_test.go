package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitLimit bounds every wait; nothing here measures time.
const waitLimit = 30 * time.Second

// logBuffer collects a process's stderr, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// listeningLine is what the tests read of the "listening" line.
type listeningLine struct {
	Msg, Addr string
	GRPCAddr  string `json:"grpc_addr"`
}

// listeningAddr waits for the JSON "listening" line and returns its addr.
func listeningAddr(t *testing.T, log *logBuffer, exited <-chan struct{}) string {
	t.Helper()
	return listening(t, log, exited).Addr
}

// listening waits for the JSON "listening" line and returns it.
func listening(t *testing.T, log *logBuffer, exited <-chan struct{}) listeningLine {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(log.String(), "\n") {
			var l listeningLine
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "listening" && l.Addr != "" {
				return l
			}
		}
		select {
		case <-exited:
			t.Fatalf("enginesim exited before listening:\n%s", log)
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("no listening line:\n%s", log)
	return listeningLine{}
}

// client returns an HTTP client whose connections are closed at cleanup,
// so no transport goroutine outlives the test.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: waitLimit}
}

// stream posts a streaming completion and returns the response, whose body
// holds SSE events.
func stream(t *testing.T, c *http.Client, addr, body string) *http.Response {
	t.Helper()
	resp, err := c.Post("http://"+addr+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %d %s", body, resp.StatusCode, raw)
	}
	return resp
}

// events reads data: payloads from r until [DONE] or the end, and reports
// whether [DONE] came.
func events(r io.Reader, limit int) (payloads []string, done bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		p, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if p == "[DONE]" {
			return payloads, true
		}
		payloads = append(payloads, p)
		if limit > 0 && len(payloads) == limit {
			return payloads, false
		}
	}
	return payloads, false
}
