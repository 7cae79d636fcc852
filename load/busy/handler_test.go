package busy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load/busy"
)

// logLine is one call to the handler's logf.
type logLine struct {
	msg string
	kv  map[string]any
}

// serve sends one request to a handler over a store holding initial, and
// returns the answer, the store and what was logged.
func serve(t *testing.T, initial busy.Thresholds, r *http.Request) (*httptest.ResponseRecorder, *busy.Store, []logLine) {
	t.Helper()
	s := newStore(t, initial)
	var logs []logLine
	logf := func(msg string, kv ...any) {
		if len(kv)%2 != 0 {
			t.Errorf("logf(%q) with an odd number of key-values: %v", msg, kv)
		}
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		logs = append(logs, logLine{msg: msg, kv: m})
	}
	w := httptest.NewRecorder()
	busy.NewHandler(s, "llama", logf).ServeHTTP(w, r)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	return w, s, logs
}

func post(body string) *http.Request {
	return httptest.NewRequest(http.MethodPost, busy.Path, strings.NewReader(body))
}

const (
	noneJSON = `"active_decode_blocks_threshold":null,"active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":null`
	noneStr  = "active_decode_blocks_threshold=none active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=none"
)

var preset = busy.Thresholds{ActiveDecodeBlocks: new(0.8), ActivePrefillTokens: new(uint64(100))}

const (
	presetJSON = `"active_decode_blocks_threshold":0.8,"active_prefill_tokens_threshold":100,"active_prefill_tokens_threshold_frac":null`
	presetStr  = "active_decode_blocks_threshold=0.8 active_prefill_tokens_threshold=100 active_prefill_tokens_threshold_frac=none"
)

func TestHandlerRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		initial  busy.Thresholds
		req      *http.Request
		wantBody string
	}{
		{name: "GET, none set", req: httptest.NewRequest(http.MethodGet, busy.Path, nil),
			wantBody: `{"thresholds":[{"model":"llama",` + noneJSON + `}]}`},
		{name: "GET, set", initial: preset, req: httptest.NewRequest(http.MethodGet, busy.Path, nil),
			wantBody: `{"thresholds":[{"model":"llama",` + presetJSON + `}]}`},
		{name: "HEAD is GET", initial: preset, req: httptest.NewRequest(http.MethodHead, busy.Path, nil),
			wantBody: `{"thresholds":[{"model":"llama",` + presetJSON + `}]}`},
		{name: "POST without thresholds reads", initial: preset, req: post(`{"model":"llama"}`),
			wantBody: `{"model":"llama",` + presetJSON + `}`},
		{name: "POST {} reads, echoing the configured model", initial: preset, req: post(`{}`),
			wantBody: `{"model":"llama",` + presetJSON + `}`},
		{name: "POST with nulls reads: null cannot unset", initial: preset,
			req:      post(`{"model":null,"active_decode_blocks_threshold":null,"active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":null}`),
			wantBody: `{"model":"llama",` + presetJSON + `}`},
		{name: "POST with the same values changes nothing", initial: preset,
			req:      post(`{"active_decode_blocks_threshold":0.8}`),
			wantBody: `{"model":"llama",` + presetJSON + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, s, logs := serve(t, tc.initial, tc.req)
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
			}
			jsonEqual(t, w.Body.String(), tc.wantBody)
			if got, want := s.Load().String(), tc.initial.String(); got != want {
				t.Errorf("store = %s, want it unchanged (%s)", got, want)
			}
			if len(logs) != 0 {
				t.Errorf("logged %v for a read", logs)
			}
		})
	}
}

func TestHandlerUpdate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		initial   busy.Thresholds
		body      string
		wantBody  string
		wantStore string
		wantModel string // in the log
	}{
		{name: "one field", body: `{"model":"llama","active_decode_blocks_threshold":0.5}`,
			wantBody:  `{"model":"llama","active_decode_blocks_threshold":0.5,"active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":null}`,
			wantStore: "active_decode_blocks_threshold=0.5 active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=none",
			wantModel: "llama"},
		{name: "partial keeps the others", initial: preset, body: `{"active_prefill_tokens_threshold_frac":1.5}`,
			wantBody:  `{"model":"llama","active_decode_blocks_threshold":0.8,"active_prefill_tokens_threshold":100,"active_prefill_tokens_threshold_frac":1.5}`,
			wantStore: "active_decode_blocks_threshold=0.8 active_prefill_tokens_threshold=100 active_prefill_tokens_threshold_frac=1.5",
			wantModel: "llama"},
		{name: "all three at their edges", initial: preset,
			body:      `{"active_decode_blocks_threshold":1,"active_prefill_tokens_threshold":18446744073709551615,"active_prefill_tokens_threshold_frac":0}`,
			wantBody:  `{"model":"llama","active_decode_blocks_threshold":1,"active_prefill_tokens_threshold":18446744073709551615,"active_prefill_tokens_threshold_frac":0}`,
			wantStore: "active_decode_blocks_threshold=1 active_prefill_tokens_threshold=18446744073709551615 active_prefill_tokens_threshold_frac=0",
			wantModel: "llama"},
		{name: "another model name is echoed, not refused", body: `{"model":"other","active_prefill_tokens_threshold":0}`,
			wantBody:  `{"model":"other","active_decode_blocks_threshold":null,"active_prefill_tokens_threshold":0,"active_prefill_tokens_threshold_frac":null}`,
			wantStore: "active_decode_blocks_threshold=none active_prefill_tokens_threshold=0 active_prefill_tokens_threshold_frac=none",
			wantModel: "other"},
		{name: "an empty model name echoes the configured one", body: `{"model":"","active_decode_blocks_threshold":0}`,
			wantBody:  `{"model":"llama","active_decode_blocks_threshold":0,"active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":null}`,
			wantStore: "active_decode_blocks_threshold=0 active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=none",
			wantModel: "llama"},
		{name: "whitespace anywhere", body: " {\n\t\"model\" : null ,\r\n \"active_decode_blocks_threshold\" :\t0.25 } \n",
			wantBody:  `{"model":"llama","active_decode_blocks_threshold":0.25,"active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":null}`,
			wantStore: "active_decode_blocks_threshold=0.25 active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=none",
			wantModel: "llama"},
		{name: "-0 is stored as 0", body: `{"active_decode_blocks_threshold":-0}`,
			wantBody:  `{"model":"llama","active_decode_blocks_threshold":0,"active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":null}`,
			wantStore: "active_decode_blocks_threshold=0 active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=none",
			wantModel: "llama"},
		{name: "an underflow is 0", body: `{"active_prefill_tokens_threshold_frac":1e-400}`,
			wantBody:  `{"model":"llama","active_decode_blocks_threshold":null,"active_prefill_tokens_threshold":null,"active_prefill_tokens_threshold_frac":0}`,
			wantStore: "active_decode_blocks_threshold=none active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=0",
			wantModel: "llama"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.initial.String()
			w, s, logs := serve(t, tc.initial, post(tc.body))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
			}
			jsonEqual(t, w.Body.String(), tc.wantBody)
			if got := s.Load().String(); got != tc.wantStore {
				t.Errorf("store = %s, want %s", got, tc.wantStore)
			}
			want := logLine{msg: "busy thresholds changed",
				kv: map[string]any{"model": tc.wantModel, "old": before, "new": tc.wantStore}}
			if len(logs) != 1 || fmt.Sprint(logs[0]) != fmt.Sprint(want) {
				t.Errorf("logged %v, want [%v]", logs, want)
			}
		})
	}
}

// TestHandlerErrors checks each refusal: its status, Dynamo's error shape,
// and that nothing changed or was logged.
func TestHandlerErrors(t *testing.T) {
	const maxInt = "18446744073709551615"
	for _, tc := range []struct {
		name       string
		req        *http.Request
		wantStatus int
		wantError  string // the exact message, or a part of it after "~"
	}{
		{name: "decode above 1", req: post(`{"active_decode_blocks_threshold":1.5}`), wantStatus: 400,
			wantError: "active_decode_blocks_threshold must be a finite number between 0 and 1, got 1.5"},
		{name: "decode negative", req: post(`{"active_decode_blocks_threshold":-0.1}`), wantStatus: 400,
			wantError: "active_decode_blocks_threshold must be a finite number between 0 and 1, got -0.1"},
		{name: "decode overflows float64", req: post(`{"active_decode_blocks_threshold":1e400}`), wantStatus: 400,
			wantError: "active_decode_blocks_threshold must be a finite number, got 1e400"},
		{name: "frac negative", req: post(`{"active_prefill_tokens_threshold_frac":-1}`), wantStatus: 400,
			wantError: "active_prefill_tokens_threshold_frac must be a finite number >= 0, got -1"},
		{name: "frac overflows float64", req: post(`{"active_prefill_tokens_threshold_frac":-1e999}`), wantStatus: 400,
			wantError: "active_prefill_tokens_threshold_frac must be a finite number, got -1e999"},
		{name: "tokens negative", req: post(`{"active_prefill_tokens_threshold":-1}`), wantStatus: 400,
			wantError: "active_prefill_tokens_threshold must be an integer between 0 and " + maxInt + ", got -1"},
		{name: "tokens fractional", req: post(`{"active_prefill_tokens_threshold":1.5}`), wantStatus: 400,
			wantError: "~got 1.5"},
		{name: "tokens in exponent form", req: post(`{"active_prefill_tokens_threshold":1e3}`), wantStatus: 400,
			wantError: "~got 1e3"},
		{name: "tokens above uint64", req: post(`{"active_prefill_tokens_threshold":18446744073709551616}`), wantStatus: 400,
			wantError: "~got 18446744073709551616"},
		{name: "a long number is clipped", req: post(`{"active_prefill_tokens_threshold":` + strings.Repeat("9", 100) + `}`), wantStatus: 400,
			wantError: "~got " + strings.Repeat("9", 40) + "..."},
		{name: "every range problem listed", req: post(`{"active_decode_blocks_threshold":2,"active_prefill_tokens_threshold":-1,"active_prefill_tokens_threshold_frac":-2}`),
			wantStatus: 400,
			wantError: "active_decode_blocks_threshold must be a finite number between 0 and 1, got 2; " +
				"active_prefill_tokens_threshold must be an integer between 0 and " + maxInt + ", got -1; " +
				"active_prefill_tokens_threshold_frac must be a finite number >= 0, got -2"},

		{name: "empty body", req: post(``), wantStatus: 422, wantError: "invalid JSON body: unexpected end of JSON input"},
		{name: "not JSON", req: post(`active_decode_blocks_threshold=0.5`), wantStatus: 422, wantError: "~invalid JSON body"},
		{name: "truncated", req: post(`{"active_decode_blocks_threshold":0.5`), wantStatus: 422, wantError: "~invalid JSON body"},
		{name: "trailing data", req: post(`{} {}`), wantStatus: 422, wantError: "~invalid JSON body"},
		{name: "null body", req: post(`null`), wantStatus: 422, wantError: "invalid JSON body: want an object, got null"},
		{name: "array body", req: post(`[]`), wantStatus: 422, wantError: "invalid JSON body: want an object, got array"},
		{name: "number body", req: post(`0.5`), wantStatus: 422, wantError: "invalid JSON body: want an object, got number"},
		{name: "unknown fields, sorted", req: post(`{"zeta":1,"active_decode_blocks_threshold":0.5,"alpha":2}`), wantStatus: 422,
			wantError: `unknown fields "alpha", "zeta"`},
		{name: "keys are case-sensitive", req: post(`{"MODEL":"llama"}`), wantStatus: 422, wantError: `unknown field "MODEL"`},
		{name: "model not a string", req: post(`{"model":7}`), wantStatus: 422, wantError: "model must be a string, got 7"},
		{name: "threshold as a string", req: post(`{"active_decode_blocks_threshold":"0.5"}`), wantStatus: 422,
			wantError: `active_decode_blocks_threshold must be a number or null, got "0.5"`},
		{name: "tokens as a bool", req: post(`{"active_prefill_tokens_threshold":true}`), wantStatus: 422,
			wantError: "active_prefill_tokens_threshold must be a number or null, got true"},
		{name: "frac as an object", req: post(`{"active_prefill_tokens_threshold_frac":{}}`), wantStatus: 422,
			wantError: "active_prefill_tokens_threshold_frac must be a number or null, got {}"},
		{name: "a type error wins over a range error", req: post(`{"active_decode_blocks_threshold":[1],"active_prefill_tokens_threshold":-1}`),
			wantStatus: 422, wantError: "active_decode_blocks_threshold must be a number or null, got [1]"},

		{name: "body over the limit", req: post(`{}` + strings.Repeat(" ", busy.MaxBodyBytes-1)), wantStatus: 413,
			wantError: fmt.Sprintf("request body larger than %d bytes", busy.MaxBodyBytes)},
		{name: "body unreadable", req: httptest.NewRequest(http.MethodPost, busy.Path, errReader{}), wantStatus: 400,
			wantError: "read request body: connection reset"},

		{name: "PUT", req: httptest.NewRequest(http.MethodPut, busy.Path, strings.NewReader(`{}`)), wantStatus: 405,
			wantError: "method PUT not allowed; use GET, HEAD, POST"},
		{name: "DELETE", req: httptest.NewRequest(http.MethodDelete, busy.Path, nil), wantStatus: 405,
			wantError: "method DELETE not allowed; use GET, HEAD, POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, s, logs := serve(t, preset, tc.req)
			if w.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tc.wantStatus, w.Body)
			}
			checkError(t, w.Body.Bytes(), tc.wantError)
			if tc.wantStatus == http.StatusMethodNotAllowed {
				if got := w.Header().Get("Allow"); got != "GET, HEAD, POST" {
					t.Errorf("Allow = %q, want GET, HEAD, POST", got)
				}
			}
			if got := s.Load().String(); got != presetStr {
				t.Errorf("store = %s, want it unchanged (%s)", got, presetStr)
			}
			if len(logs) != 0 {
				t.Errorf("logged %v for a refused request", logs)
			}
		})
	}
}

// checkError checks that body is exactly {"error": msg}, where a want
// starting with "~" only has to be contained in msg.
func checkError(t *testing.T, body []byte, want string) {
	t.Helper()
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", body, err)
	}
	msg, ok := got["error"].(string)
	if !ok || len(got) != 1 {
		t.Fatalf(`body = %s, want {"error": "..."}`, body)
	}
	if part, ok := strings.CutPrefix(want, "~"); ok {
		if !strings.Contains(msg, part) {
			t.Errorf("error = %q, want it to contain %q", msg, part)
		}
	} else if msg != want {
		t.Errorf("error = %q\nwant      %q", msg, want)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// TestHandlerBodyAtLimit checks that the limit is inclusive.
func TestHandlerBodyAtLimit(t *testing.T) {
	body := `{}` + strings.Repeat(" ", busy.MaxBodyBytes-2)
	if w, _, _ := serve(t, preset, post(body)); w.Code != http.StatusOK {
		t.Fatalf("status = %d for a body of exactly MaxBodyBytes, want 200; body %s", w.Code, w.Body)
	}
}

// TestHandlerServer goes through a real server: HEAD must come back without
// a body, and a change must be visible to the next GET.
func TestHandlerServer(t *testing.T) {
	s := newStore(t, busy.Thresholds{})
	mux := http.NewServeMux()
	mux.Handle(busy.Path, busy.NewHandler(s, "llama", nil))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	resp, err := srv.Client().Post(srv.URL+busy.Path, "application/json", strings.NewReader(`{"active_prefill_tokens_threshold":7}`))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST status = %d", resp.StatusCode)
	}
	resp, err = srv.Client().Get(srv.URL + busy.Path)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, readAll(t, resp),
		`{"thresholds":[{"model":"llama","active_decode_blocks_threshold":null,"active_prefill_tokens_threshold":7,"active_prefill_tokens_threshold_frac":null}]}`)
	resp, err = srv.Client().Head(srv.URL + busy.Path)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK || body != "" {
		t.Errorf("HEAD = %d %q, want 200 and no body", resp.StatusCode, body)
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewHandlerNilStore(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewHandler(nil, ...) did not panic")
		}
	}()
	busy.NewHandler(nil, "llama", nil)
}
