package limits_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/admin/limits"
	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/limiter"
)

const (
	offJSON = `{"engine_request_limit":null,"engine_request_waiting_limit":null,"request_queue_limit":null,` +
		`"engine_prefill_token_limit":null,"request_queue_token_limit":null,"per_rank":false,"gate":"off"}`
	maxStr      = "9223372036854775806" // limits.MaxLimit on 64-bit platforms
	maxTokenStr = "4611686018427387904" // limits.MaxTokenLimit, 2^62
)

// preset is N=4, W unset, Q=8.
var preset = limiter.Limits{Slots: 4, QueueLen: 8}

const presetJSON = `{"engine_request_limit":4,"engine_request_waiting_limit":null,"request_queue_limit":8,` +
	`"engine_prefill_token_limit":null,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}`

// tokens is N=4, Q=8, P=1000 and a queue token limit of 5000.
var tokens = limiter.Limits{Slots: 4, QueueLen: 8, PrefillTokenLimit: 1000, QueueTokenLimit: 5000}

const tokensJSON = `{"engine_request_limit":4,"engine_request_waiting_limit":null,"request_queue_limit":8,` +
	`"engine_prefill_token_limit":1000,"request_queue_token_limit":5000,"per_rank":false,"gate":"on"}`

func TestMaxLimit(t *testing.T) {
	if strconv.IntSize == 64 && strconv.Itoa(limits.MaxLimit) != maxStr {
		t.Fatalf("MaxLimit = %d, want %s", limits.MaxLimit, maxStr)
	}
	if got := strconv.FormatInt(limits.MaxTokenLimit, 10); got != maxTokenStr {
		t.Fatalf("MaxTokenLimit = %s, want %s", got, maxTokenStr)
	}
}

// TestMaxTokenLimitIsTheFlags checks that the API takes exactly the token
// limits the flags take at start: MaxTokenLimit, and not one more.
func TestMaxTokenLimitIsTheFlags(t *testing.T) {
	for _, flag := range []string{"engine-prefill-token-limit", "request-queue-token-limit"} {
		t.Run(flag, func(t *testing.T) {
			load := func(n int64) (config.Config, error) {
				return config.Load([]string{"--engine-request-limit=1", "--" + flag + "=" + strconv.FormatInt(n, 10)}, nil)
			}
			c, err := load(limits.MaxTokenLimit)
			if err != nil {
				t.Fatalf("--%s=MaxTokenLimit: %v", flag, err)
			}
			if got := max(c.EnginePrefillTokenLimit, c.RequestQueueTokenLimit); got != limits.MaxTokenLimit {
				t.Errorf("--%s=MaxTokenLimit read as %d", flag, got)
			}
			if _, err := load(limits.MaxTokenLimit + 1); err == nil {
				t.Errorf("--%s=MaxTokenLimit+1 accepted; the API refuses it", flag)
			}
		})
	}
}

// TestRead checks the answers that change nothing: GET, HEAD, and a POST
// that names no limit.
func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name     string
		initial  limiter.Limits
		req      *http.Request
		wantBody string
	}{
		{name: "GET, N only", initial: preset, req: get(), wantBody: presetJSON},
		{name: "GET, W only", initial: limiter.Limits{WaitingLimit: 3}, req: get(),
			wantBody: `{"engine_request_limit":null,"engine_request_waiting_limit":3,"request_queue_limit":0,` +
				`"engine_prefill_token_limit":null,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}`},
		{name: "GET, N, W and Q", initial: limiter.Limits{Slots: 5, WaitingLimit: 2, QueueLen: 1}, req: get(),
			wantBody: `{"engine_request_limit":5,"engine_request_waiting_limit":2,"request_queue_limit":1,` +
				`"engine_prefill_token_limit":null,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}`},
		{name: "GET, token limits", initial: tokens, req: get(), wantBody: tokensJSON},
		{name: "GET, P only", initial: limiter.Limits{WaitingLimit: 2, PrefillTokenLimit: 8192}, req: get(),
			wantBody: `{"engine_request_limit":null,"engine_request_waiting_limit":2,"request_queue_limit":0,` +
				`"engine_prefill_token_limit":8192,"request_queue_token_limit":null,"per_rank":false,"gate":"on"}`},
		{name: "GET, queue tokens only, at the bound", initial: limiter.Limits{Slots: 1, QueueTokenLimit: limits.MaxTokenLimit},
			req: get(), wantBody: `{"engine_request_limit":1,"engine_request_waiting_limit":null,"request_queue_limit":0,` +
				`"engine_prefill_token_limit":null,"request_queue_token_limit":` + maxTokenStr + `,"per_rank":false,"gate":"on"}`},
		{name: "GET, gate off", initial: off, req: get(), wantBody: offJSON},
		{name: "HEAD is GET", initial: preset, req: httptest.NewRequest(http.MethodHead, limits.Path, nil), wantBody: presetJSON},
		{name: "POST {} reads", initial: preset, req: post(`{}`), wantBody: presetJSON},
		{name: "POST {} reads the token limits", initial: tokens, req: post(`{}`), wantBody: tokensJSON},
		{name: "POST {} reads with the gate off", initial: off, req: post(" { } "), wantBody: offJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t, tc.initial)
			rec := &recorder{t: t}
			w := serve(t, limits.NewHandler(rec.options(g)), tc.req)
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
			}
			jsonEqual(t, w.Body.String(), tc.wantBody)
			if got := g.Limits(); got != tc.initial {
				t.Errorf("limits = %+v, want them unchanged (%+v)", got, tc.initial)
			}
			if len(rec.logs) != 0 || rec.changed != 0 {
				t.Errorf("logged %v and reported %d changes for a read", rec.logs, rec.changed)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial limiter.Limits
		body    string
		want    limiter.Limits
	}{
		{name: "N", initial: preset, body: `{"engine_request_limit":2}`, want: limiter.Limits{Slots: 2, QueueLen: 8}},
		{name: "W", initial: preset, body: `{"engine_request_waiting_limit":3}`,
			want: limiter.Limits{Slots: 4, WaitingLimit: 3, QueueLen: 8}},
		{name: "Q", initial: preset, body: `{"request_queue_limit":0}`, want: limiter.Limits{Slots: 4}},
		{name: "partial keeps the others", initial: limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 8},
			body: `{"request_queue_limit":16}`, want: limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 16}},
		{name: "all three", initial: preset,
			body: `{"engine_request_limit":1,"engine_request_waiting_limit":1,"request_queue_limit":1}`,
			want: limiter.Limits{Slots: 1, WaitingLimit: 1, QueueLen: 1}},
		{name: "null W unsets it", initial: limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 8},
			body: `{"engine_request_waiting_limit":null}`, want: preset},
		{name: "null N unsets it while W stays", initial: limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 8},
			body: `{"engine_request_limit":null}`, want: limiter.Limits{WaitingLimit: 2, QueueLen: 8}},
		{name: "swap N for W in one request", initial: preset,
			body: `{"engine_request_limit":null,"engine_request_waiting_limit":6}`,
			want: limiter.Limits{WaitingLimit: 6, QueueLen: 8}},
		{name: "at the upper edge", initial: preset,
			body: `{"engine_request_limit":` + maxStr + `,"request_queue_limit":` + maxStr + `}`,
			want: limiter.Limits{Slots: limits.MaxLimit, QueueLen: limits.MaxLimit}},
		{name: "-0 is 0", initial: preset, body: `{"request_queue_limit":-0}`, want: limiter.Limits{Slots: 4}},
		{name: "whitespace anywhere", initial: preset, body: " {\n\t\"engine_request_limit\" :\t7 } \n",
			want: limiter.Limits{Slots: 7, QueueLen: 8}},

		{name: "P", initial: preset, body: `{"engine_prefill_token_limit":16384}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, PrefillTokenLimit: 16384}},
		{name: "queue tokens", initial: preset, body: `{"request_queue_token_limit":65536}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, QueueTokenLimit: 65536}},
		{name: "both token limits", initial: preset, body: `{"engine_prefill_token_limit":1,"request_queue_token_limit":1}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, PrefillTokenLimit: 1, QueueTokenLimit: 1}},
		{name: "a token limit keeps the others", initial: tokens, body: `{"engine_prefill_token_limit":2000}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, PrefillTokenLimit: 2000, QueueTokenLimit: 5000}},
		{name: "N keeps the token limits", initial: tokens, body: `{"engine_request_limit":6}`,
			want: limiter.Limits{Slots: 6, QueueLen: 8, PrefillTokenLimit: 1000, QueueTokenLimit: 5000}},
		{name: "null P unsets it", initial: tokens, body: `{"engine_prefill_token_limit":null}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, QueueTokenLimit: 5000}},
		{name: "0 P unsets it", initial: tokens, body: `{"engine_prefill_token_limit":0}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, QueueTokenLimit: 5000}},
		{name: "null queue tokens unsets it", initial: tokens, body: `{"request_queue_token_limit":null}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, PrefillTokenLimit: 1000}},
		{name: "0 queue tokens unsets it", initial: tokens, body: `{"request_queue_token_limit":0}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, PrefillTokenLimit: 1000}},
		{name: "all five", initial: tokens,
			body: `{"engine_request_limit":null,"engine_request_waiting_limit":3,"request_queue_limit":2,` +
				`"engine_prefill_token_limit":0,"request_queue_token_limit":7}`,
			want: limiter.Limits{WaitingLimit: 3, QueueLen: 2, QueueTokenLimit: 7}},
		{name: "token limits at the upper edge", initial: preset,
			body: `{"engine_prefill_token_limit":` + maxTokenStr + `,"request_queue_token_limit":` + maxTokenStr + `}`,
			want: limiter.Limits{Slots: 4, QueueLen: 8, PrefillTokenLimit: limits.MaxTokenLimit, QueueTokenLimit: limits.MaxTokenLimit}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strconv.IntSize != 64 && strings.Contains(tc.body, maxStr) {
				t.Skip("64-bit limits")
			}
			g := newGate(t, tc.initial)
			rec := &recorder{t: t}
			w := serve(t, limits.NewHandler(rec.options(g)), post(tc.body))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
			}
			if got := g.Limits(); got != tc.want {
				t.Errorf("limits = %+v, want %+v", got, tc.want)
			}
			jsonEqual(t, w.Body.String(), shape(tc.want))
			want := changeLog(tc.initial, tc.want)
			if len(rec.logs) != 1 || !reflect.DeepEqual(rec.logs[0], want) {
				t.Errorf("logged %v, want [%v]", rec.logs, want)
			}
			if rec.changed != 1 {
				t.Errorf("Changed called %d times, want 1", rec.changed)
			}
		})
	}
}

// shape is the GET answer for l on a gate that is on, without per-rank
// limits.
func shape(l limiter.Limits) string {
	v := func(n int64) string {
		if n == 0 {
			return "null"
		}
		return strconv.FormatInt(n, 10)
	}
	return fmt.Sprintf(`{"engine_request_limit":%s,"engine_request_waiting_limit":%s,"request_queue_limit":%d,`+
		`"engine_prefill_token_limit":%s,"request_queue_token_limit":%s,"per_rank":false,"gate":"on"}`,
		v(int64(l.Slots)), v(int64(l.WaitingLimit)), l.QueueLen, v(l.PrefillTokenLimit), v(l.QueueTokenLimit))
}

// TestUpdateSameValues checks that a POST of the limits in force answers
// them and neither logs nor reports a change.
func TestUpdateSameValues(t *testing.T) {
	for _, tc := range []struct {
		name     string
		initial  limiter.Limits
		body     string
		wantBody string
	}{
		{name: "N, W and Q", initial: preset,
			body: `{"engine_request_limit":4,"engine_request_waiting_limit":null,"request_queue_limit":8}`, wantBody: presetJSON},
		{name: "unset token limits as null", initial: preset,
			body: `{"engine_prefill_token_limit":null,"request_queue_token_limit":null}`, wantBody: presetJSON},
		{name: "unset token limits as 0", initial: preset,
			body: `{"engine_prefill_token_limit":0,"request_queue_token_limit":0}`, wantBody: presetJSON},
		{name: "token limits in force", initial: tokens,
			body: `{"engine_prefill_token_limit":1000,"request_queue_token_limit":5000}`, wantBody: tokensJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate(t, tc.initial)
			rec := &recorder{t: t}
			w := serve(t, limits.NewHandler(rec.options(g)), post(tc.body))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, want 200; body %s", w.Code, w.Body)
			}
			jsonEqual(t, w.Body.String(), tc.wantBody)
			if got := g.Limits(); got != tc.initial {
				t.Errorf("limits = %+v, want them unchanged (%+v)", got, tc.initial)
			}
			if len(rec.logs) != 0 || rec.changed != 0 {
				t.Errorf("logged %v and reported %d changes for no change", rec.logs, rec.changed)
			}
		})
	}
}

// TestErrors checks each refusal: its status, the error shape, and that
// nothing changed, was logged or was reported.
func TestErrors(t *testing.T) {
	rangeN := "engine_request_limit must be an integer between 1 and " + maxStr + ", got "
	rangeW := "engine_request_waiting_limit must be an integer between 1 and " + maxStr + ", got "
	rangeQ := "request_queue_limit must be an integer between 0 and " + maxStr + ", got "
	rangeP := "engine_prefill_token_limit must be an integer between 0 and " + maxTokenStr + ", got "
	rangeT := "request_queue_token_limit must be an integer between 0 and " + maxTokenStr + ", got "
	stay := "at least one engine limit must stay set: engine_request_limit and engine_request_waiting_limit cannot both be null"
	for _, tc := range []struct {
		name       string
		initial    limiter.Limits // preset when zero and not gateOff
		gateOff    bool
		req        *http.Request
		wantStatus int
		wantError  string // the exact message, or a part of it after "~"
	}{
		{name: "N 0", req: post(`{"engine_request_limit":0}`), wantStatus: 400, wantError: rangeN + "0"},
		{name: "N negative", req: post(`{"engine_request_limit":-3}`), wantStatus: 400, wantError: rangeN + "-3"},
		{name: "N fractional", req: post(`{"engine_request_limit":1.5}`), wantStatus: 400, wantError: rangeN + "1.5"},
		{name: "N written 2.0", req: post(`{"engine_request_limit":2.0}`), wantStatus: 400, wantError: rangeN + "2.0"},
		{name: "N in exponent form", req: post(`{"engine_request_limit":1e3}`), wantStatus: 400, wantError: rangeN + "1e3"},
		{name: "N at math.MaxInt, which the limiter reads as unset",
			req: post(`{"engine_request_limit":9223372036854775807}`), wantStatus: 400, wantError: "~got 9223372036854775807"},
		{name: "N beyond int", req: post(`{"engine_request_limit":18446744073709551616}`), wantStatus: 400,
			wantError: "~got 18446744073709551616"},
		{name: "a long number is clipped", req: post(`{"request_queue_limit":` + strings.Repeat("9", 100) + `}`),
			wantStatus: 400, wantError: rangeQ + strings.Repeat("9", 40) + "..."},
		{name: "W 0", req: post(`{"engine_request_waiting_limit":0}`), wantStatus: 400, wantError: rangeW + "0"},
		{name: "Q negative", req: post(`{"request_queue_limit":-1}`), wantStatus: 400, wantError: rangeQ + "-1"},
		{name: "Q null", req: post(`{"request_queue_limit":null}`), wantStatus: 400,
			wantError: "request_queue_limit cannot be unset: must be an integer between 0 and " + maxStr + ", got null"},
		{name: "every range problem listed", req: post(`{"engine_request_limit":0,"engine_request_waiting_limit":-1,"request_queue_limit":-2}`),
			wantStatus: 400, wantError: rangeN + "0; " + rangeW + "-1; " + rangeQ + "-2"},
		{name: "N and W both null", initial: limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 8},
			req: post(`{"engine_request_limit":null,"engine_request_waiting_limit":null}`), wantStatus: 400, wantError: stay},
		{name: "both null, listed with the other problems",
			req:        post(`{"engine_request_limit":null,"engine_request_waiting_limit":null,"request_queue_limit":-1}`),
			wantStatus: 400, wantError: rangeQ + "-1; " + stay},
		{name: "null N while W is unset", req: post(`{"engine_request_limit":null}`), wantStatus: 400, wantError: stay},
		{name: "null W while N is unset", initial: limiter.Limits{WaitingLimit: 2, QueueLen: 8},
			req: post(`{"engine_request_waiting_limit":null,"request_queue_limit":1}`), wantStatus: 400, wantError: stay},
		{name: "P negative", req: post(`{"engine_prefill_token_limit":-1}`), wantStatus: 400, wantError: rangeP + "-1"},
		{name: "P fractional", req: post(`{"engine_prefill_token_limit":1.5}`), wantStatus: 400, wantError: rangeP + "1.5"},
		{name: "P written 2.0", req: post(`{"engine_prefill_token_limit":2.0}`), wantStatus: 400, wantError: rangeP + "2.0"},
		{name: "P in exponent form", req: post(`{"engine_prefill_token_limit":1e3}`), wantStatus: 400, wantError: rangeP + "1e3"},
		{name: "P above 2^62", req: post(`{"engine_prefill_token_limit":4611686018427387905}`), wantStatus: 400,
			wantError: rangeP + "4611686018427387905"},
		{name: "P at math.MaxInt64, which the limiter reads as unset",
			req: post(`{"engine_prefill_token_limit":9223372036854775807}`), wantStatus: 400, wantError: rangeP + "9223372036854775807"},
		{name: "queue tokens negative", initial: tokens, req: post(`{"request_queue_token_limit":-5}`), wantStatus: 400,
			wantError: rangeT + "-5"},
		{name: "queue tokens fractional", req: post(`{"request_queue_token_limit":1.5}`), wantStatus: 400, wantError: rangeT + "1.5"},
		{name: "queue tokens beyond int64", req: post(`{"request_queue_token_limit":18446744073709551616}`), wantStatus: 400,
			wantError: rangeT + "18446744073709551616"},
		{name: "every token range problem listed, after the others",
			req:        post(`{"request_queue_token_limit":-2,"engine_prefill_token_limit":-1,"request_queue_limit":-1}`),
			wantStatus: 400, wantError: rangeQ + "-1; " + rangeP + "-1; " + rangeT + "-2"},
		{name: "a bad token limit refuses the whole change", initial: tokens,
			req: post(`{"engine_request_limit":2,"request_queue_token_limit":-1}`), wantStatus: 400, wantError: rangeT + "-1"},

		{name: "empty body", req: post(``), wantStatus: 422, wantError: "invalid JSON body: unexpected end of JSON input"},
		{name: "not JSON", req: post(`engine_request_limit=2`), wantStatus: 422, wantError: "~invalid JSON body"},
		{name: "truncated", req: post(`{"engine_request_limit":2`), wantStatus: 422, wantError: "~invalid JSON body"},
		{name: "trailing data", req: post(`{} {}`), wantStatus: 422, wantError: "~invalid JSON body"},
		{name: "null body", req: post(`null`), wantStatus: 422, wantError: "invalid JSON body: want an object, got null"},
		{name: "array body", req: post(`[]`), wantStatus: 422, wantError: "invalid JSON body: want an object, got array"},
		{name: "number body", req: post(`2`), wantStatus: 422, wantError: "invalid JSON body: want an object, got number"},
		{name: "unknown fields, sorted", req: post(`{"zeta":1,"engine_request_limit":2,"alpha":2}`), wantStatus: 422,
			wantError: `unknown fields "alpha", "zeta"`},
		{name: "keys are case-sensitive", req: post(`{"Engine_Request_Limit":2}`), wantStatus: 422,
			wantError: `unknown field "Engine_Request_Limit"`},
		{name: "N as a string", req: post(`{"engine_request_limit":"2"}`), wantStatus: 422,
			wantError: `engine_request_limit must be an integer or null, got "2"`},
		{name: "W as a bool", req: post(`{"engine_request_waiting_limit":true}`), wantStatus: 422,
			wantError: "engine_request_waiting_limit must be an integer or null, got true"},
		{name: "Q as an object", req: post(`{"request_queue_limit":{}}`), wantStatus: 422,
			wantError: "request_queue_limit must be an integer, got {}"},
		{name: "a type error wins over a range error", req: post(`{"engine_request_limit":[1],"request_queue_limit":-1}`),
			wantStatus: 422, wantError: "engine_request_limit must be an integer or null, got [1]"},
		{name: "P as a string", req: post(`{"engine_prefill_token_limit":"16k"}`), wantStatus: 422,
			wantError: `engine_prefill_token_limit must be an integer or null, got "16k"`},
		{name: "queue tokens as a string", initial: tokens, req: post(`{"request_queue_token_limit":"5000"}`), wantStatus: 422,
			wantError: `request_queue_token_limit must be an integer or null, got "5000"`},
		{name: "queue tokens as a bool", req: post(`{"request_queue_token_limit":false}`), wantStatus: 422,
			wantError: "request_queue_token_limit must be an integer or null, got false"},
		{name: "token keys are case-sensitive", req: post(`{"Engine_Prefill_Token_Limit":2}`), wantStatus: 422,
			wantError: `unknown field "Engine_Prefill_Token_Limit"`},

		{name: "gate off", gateOff: true, req: post(`{"engine_request_limit":2}`), wantStatus: 409,
			wantError: "~the admission gate is off"},
		{name: "gate off names the start flags", gateOff: true, req: post(`{"request_queue_limit":2}`), wantStatus: 409,
			wantError: "~--engine-request-limit or --engine-request-waiting-limit"},
		{name: "gate off, a bad body is still a 400", gateOff: true, req: post(`{"engine_request_limit":0}`), wantStatus: 400,
			wantError: rangeN + "0"},
		{name: "gate off, P", gateOff: true, req: post(`{"engine_prefill_token_limit":1000}`), wantStatus: 409,
			wantError: "~the admission gate is off"},
		{name: "gate off, queue tokens unset", gateOff: true, req: post(`{"request_queue_token_limit":null}`), wantStatus: 409,
			wantError: "~the admission gate is off"},
		{name: "gate off, a bad token limit is still a 400", gateOff: true, req: post(`{"engine_prefill_token_limit":-1}`),
			wantStatus: 400, wantError: rangeP + "-1"},

		{name: "body over the limit", req: post(`{}` + strings.Repeat(" ", limits.MaxBodyBytes-1)), wantStatus: 413,
			wantError: fmt.Sprintf("request body larger than %d bytes", limits.MaxBodyBytes)},
		{name: "body unreadable", req: httptest.NewRequest(http.MethodPost, limits.Path, errReader{}), wantStatus: 400,
			wantError: "read request body: connection reset"},

		{name: "PUT", req: httptest.NewRequest(http.MethodPut, limits.Path, strings.NewReader(`{}`)), wantStatus: 405,
			wantError: "method PUT not allowed; use GET, HEAD, POST"},
		{name: "DELETE", req: httptest.NewRequest(http.MethodDelete, limits.Path, nil), wantStatus: 405,
			wantError: "method DELETE not allowed; use GET, HEAD, POST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			initial := tc.initial
			if initial == off && !tc.gateOff {
				initial = preset
			}
			g := newGate(t, initial)
			rec := &recorder{t: t}
			w := serve(t, limits.NewHandler(rec.options(g)), tc.req)
			if w.Code != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", w.Code, tc.wantStatus, w.Body)
			}
			checkError(t, w.Body.Bytes(), tc.wantError)
			if tc.wantStatus == http.StatusMethodNotAllowed {
				if got := w.Header().Get("Allow"); got != "GET, HEAD, POST" {
					t.Errorf("Allow = %q, want GET, HEAD, POST", got)
				}
			}
			if got := g.Limits(); got != initial {
				t.Errorf("limits = %+v, want them unchanged (%+v)", got, initial)
			}
			if len(rec.logs) != 0 || rec.changed != 0 {
				t.Errorf("logged %v and reported %d changes for a refused request", rec.logs, rec.changed)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// TestBodyAtLimit checks that the size bound is inclusive.
func TestBodyAtLimit(t *testing.T) {
	body := `{"request_queue_limit":3}`
	body += strings.Repeat(" ", limits.MaxBodyBytes-len(body))
	g := newGate(t, preset)
	w := serve(t, limits.NewHandler(limits.Options{Limits: g}), post(body))
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d for a body of exactly MaxBodyBytes, want 200; body %s", w.Code, w.Body)
	}
	if got := g.Limits().QueueLen; got != 3 {
		t.Errorf("Q = %d, want 3", got)
	}
}

// failingGate is a gate that is on but refuses every change.
type failingGate struct{}

func (failingGate) Limits() limiter.Limits { return preset }
func (failingGate) PerRank() bool          { return false }
func (failingGate) SetLimits(f func(limiter.Limits) limiter.Limits) (old, now limiter.Limits, err error) {
	f(preset)
	return preset, preset, errors.New("rank 3 refused")
}

func TestGateFails(t *testing.T) {
	rec := &recorder{t: t}
	w := serve(t, limits.NewHandler(rec.options(failingGate{})), post(`{"engine_request_limit":2}`))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500; body %s", w.Code, w.Body)
	}
	checkError(t, w.Body.Bytes(), "cannot change the limits: rank 3 refused")
	if len(rec.logs) != 0 || rec.changed != 0 {
		t.Errorf("logged %v and reported %d changes for a failed change", rec.logs, rec.changed)
	}
}

// TestServer goes through a real server: HEAD comes back without a body,
// and a change is visible to the next GET.
func TestServer(t *testing.T) {
	g := newGate(t, preset)
	mux := http.NewServeMux()
	mux.Handle(limits.Path, limits.NewHandler(limits.Options{Limits: g}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	resp, err := srv.Client().Post(srv.URL+limits.Path, "application/json", strings.NewReader(`{"engine_request_waiting_limit":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST status = %d", resp.StatusCode)
	}
	resp, err = srv.Client().Get(srv.URL + limits.Path)
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, readAll(t, resp), shape(limiter.Limits{Slots: 4, WaitingLimit: 2, QueueLen: 8}))
	resp, err = srv.Client().Head(srv.URL + limits.Path)
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

func TestNewHandlerNilLimits(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewHandler without Limits did not panic")
		}
	}()
	limits.NewHandler(limits.Options{})
}
