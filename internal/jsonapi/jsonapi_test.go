package jsonapi_test

import (
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/internal/jsonapi"
)

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// endless is a body that never ends; it counts the bytes read from it.
type endless struct{ n int }

func (e *endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	e.n += len(p)
	return len(p), nil
}

func TestReadBody(t *testing.T) {
	const limit = 16
	for _, tc := range []struct {
		name       string
		body       io.Reader
		want       string
		wantStatus int // 0: no error
		wantError  string
	}{
		{name: "empty", body: strings.NewReader(""), want: ""},
		{name: "small", body: strings.NewReader(`{"a":1}`), want: `{"a":1}`},
		{name: "exactly the limit", body: strings.NewReader(strings.Repeat("x", limit)), want: strings.Repeat("x", limit)},
		{name: "one byte over", body: strings.NewReader(strings.Repeat("x", limit+1)),
			wantStatus: http.StatusRequestEntityTooLarge, wantError: "request body larger than 16 bytes"},
		{name: "far over", body: strings.NewReader(strings.Repeat("x", 10*limit)),
			wantStatus: http.StatusRequestEntityTooLarge, wantError: "request body larger than 16 bytes"},
		{name: "unreadable", body: errReader{},
			wantStatus: http.StatusBadRequest, wantError: "read request body: connection reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/", tc.body)
			body, err := jsonapi.ReadBody(httptest.NewRecorder(), r, limit)
			if tc.wantStatus == 0 {
				if err != nil || string(body) != tc.want {
					t.Fatalf("ReadBody = %q, %v; want %q, nil", body, err, tc.want)
				}
				return
			}
			if err == nil || err.Status != tc.wantStatus || err.Message != tc.wantError || body != nil {
				t.Fatalf("ReadBody = %q, %+v; want nil, {%d %q}", body, err, tc.wantStatus, tc.wantError)
			}
		})
	}
}

// TestReadBodyBounded checks that a body that never ends is refused after
// at most limit+1 bytes: ReadBody does not buffer what a client sends.
func TestReadBodyBounded(t *testing.T) {
	const limit = 64 << 10
	src := &endless{}
	r := httptest.NewRequest(http.MethodPost, "/", src)
	if _, err := jsonapi.ReadBody(httptest.NewRecorder(), r, limit); err == nil || err.Status != http.StatusRequestEntityTooLarge {
		t.Fatalf("ReadBody of an endless body = %+v, want a 413", err)
	}
	if src.n > limit+1 {
		t.Errorf("read %d bytes of the body, want at most %d", src.n, limit+1)
	}
}

func TestWriteJSON(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		v          any
		wantStatus int
		wantBody   string
	}{
		{name: "object", status: http.StatusOK, v: struct {
			N *int   `json:"n"`
			S string `json:"s"`
		}{S: "x"}, wantStatus: http.StatusOK, wantBody: `{"n":null,"s":"x"}`},
		{name: "status kept", status: http.StatusConflict, v: []int{1, 2}, wantStatus: http.StatusConflict, wantBody: `[1,2]`},
		{name: "NaN", status: http.StatusOK, v: math.NaN(),
			wantStatus: http.StatusInternalServerError, wantBody: `{"error":"internal error"}`},
		{name: "channel", status: http.StatusCreated, v: make(chan int),
			wantStatus: http.StatusInternalServerError, wantBody: `{"error":"internal error"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			jsonapi.WriteJSON(w, tc.status, tc.v)
			check(t, w, tc.wantStatus, tc.wantBody)
		})
	}
}

func TestWriteError(t *testing.T) {
	for _, msg := range []string{"", "bad", `a "quoted" <tag> & ü`, "two\nlines"} {
		w := httptest.NewRecorder()
		jsonapi.WriteError(w, http.StatusTeapot, msg)
		want, _ := json.Marshal(map[string]string{"error": msg})
		check(t, w, http.StatusTeapot, string(want))
	}
}

func TestMethodNotAllowed(t *testing.T) {
	w := httptest.NewRecorder()
	jsonapi.MethodNotAllowed(w, httptest.NewRequest(http.MethodDelete, "/x", nil), "GET, HEAD, POST")
	check(t, w, http.StatusMethodNotAllowed, `{"error":"method DELETE not allowed; use GET, HEAD, POST"}`)
	if got := w.Header().Get("Allow"); got != "GET, HEAD, POST" {
		t.Errorf("Allow = %q, want %q", got, "GET, HEAD, POST")
	}
}

func TestError(t *testing.T) {
	var err error = jsonapi.Unprocessable("bad %s: %d", "x", 7)
	var e *jsonapi.Error
	if !errors.As(err, &e) || e.Status != http.StatusUnprocessableEntity || e.Message != "bad x: 7" || err.Error() != "bad x: 7" {
		t.Errorf("Unprocessable = %+v (%q), want {422 \"bad x: 7\"}", e, err)
	}
}

// check checks an answer's status, its exact body and that it is
// application/json.
func check(t *testing.T, w *httptest.ResponseRecorder, status int, body string) {
	t.Helper()
	if w.Code != status || w.Body.String() != body {
		t.Errorf("answer = %d %s, want %d %s", w.Code, w.Body, status, body)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
}
