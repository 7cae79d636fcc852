package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slotgate/slotgate/internal/bounded"
)

// testServer is a real loopback HTTP server in front of an engine.
type testServer struct {
	url    string
	client *http.Client
	engine *Engine
}

// startServer serves an engine with opts; run says whether its loops run
// (without them requests wait for ever). Everything stops at cleanup:
// client connections first, so handlers return, then the engine.
func startServer(t *testing.T, opts Options, run bool, so ServerOptions) *testServer {
	t.Helper()
	e := newEngine(t, opts)
	if run {
		runEngine(t, e)
	}
	so.Engine = e
	h, err := NewHandler(so)
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return &testServer{url: srv.URL, client: srv.Client(), engine: e}
}

// fastServer runs a default engine at speedup 1000.
func fastServer(t *testing.T) *testServer {
	return startServer(t, Options{SpeedupRatio: 1000}, true, ServerOptions{})
}

// post sends body to path with ctx and returns the response; the body is
// closed at cleanup.
func (s *testServer) post(t *testing.T, ctx context.Context, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// postJSON posts body and decodes the answer into out, checking the status.
func (s *testServer) postJSON(t *testing.T, path, body string, status int, out any) {
	t.Helper()
	resp := s.post(t, t.Context(), path, body)
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("POST %s %s: %d %s, want %d", path, body, resp.StatusCode, raw, status)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
	}
}

// readEvents reads a whole SSE body: every event must be one "data: "
// line followed by a blank line. It returns the payloads in order.
func readEvents(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		payload, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("event line %q does not start with \"data: \"", line)
		}
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %q is not followed by a blank line", line)
		}
		out = append(out, payload)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read events: %v", err)
	}
	return out
}

// decodeStrict decodes one JSON payload into a map, numbers kept exact.
func decodeStrict(t *testing.T, payload string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(payload)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("event %q is not a JSON object: %v", payload, err)
	}
	return m
}

// eventually polls cond until it holds, for a real-network effect (a
// client's disconnect reaching the server) that no clock can fast-forward.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	bounded.Wait{Within: 10 * time.Second, Every: 2 * time.Millisecond}.True(t, what, cond)
}

func decodeInto(raw []byte, v any) error { return json.Unmarshal(raw, v) }
