package e2e_test

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
)

// fastPlaneEnv names the variable that runs the bad-input catalogue
// against the fasthttp data plane (issue 17's experiment). Off by
// default: the experiment is judged by what fails here, so the test is
// a measurement, not a gate of the build.
const fastPlaneEnv = "SLOTGATE_E2E_FASTPLANE"

// TestBadInputFastPlane plays the HTTP/1.x cases of TestBadInput's
// catalogue against slotgate with --data-plane fasthttp, wanting the same
// answers as the net/http plane gives. The HTTP/2 and gRPC cases are
// left out: that plane serves neither (start-up refuses the gRPC
// settings). One case fails there (2026-12-03): "body trickled" gets no
// answer instead of 408, since fasthttp resets a request's head before
// its error handler runs, so a late body cannot be told from a late head.
func TestBadInputFastPlane(t *testing.T) {
	if os.Getenv(fastPlaneEnv) == "" {
		t.Skipf("the fasthttp plane is an experiment: set %s=1 to play the catalogue against it", fastPlaneEnv)
	}
	t.Cleanup(func() { http.DefaultTransport.(*http.Transport).CloseIdleConnections() })
	b := newFastBench(t)
	oversizedBody := strings.Repeat("x", badMaxBody*2)
	cases := []badCase{
		{name: "oversized headers",
			send: "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n",
			want: answer{status: 431, errType: "invalid_request_error", reason: "header_too_large", closed: true}},
		{name: "oversized body",
			send: fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(oversizedBody), oversizedBody),
			want: answer{status: 413, errType: "invalid_request_error", reason: "too_large", closed: true}},
		{name: "headers trickled", own: true, do: trickleHeaders, want: answer{closed: true}},
		{name: "body trickled", do: trickleBody,
			want: answer{status: 408, errType: "invalid_request_error", reason: "body_timeout", closed: true}},
		{name: "Content-Length and Transfer-Encoding",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
			want: badRequest},
		{name: "duplicate Content-Length",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
			want: badRequest},
		{name: "conflicting Content-Length",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 30\r\n\r\n{}",
			want: badRequest},
		{name: "Content-Length list",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2, 2\r\n\r\n{}",
			want: badRequest},
		{name: "obsolete line folding",
			send: "GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n", want: badRequest},
		{name: "bare LF request line", send: "GET /v1/models HTTP/1.1\nHost: x\n\n", want: badRequest},
		{name: "bare LF header line", send: "GET /v1/models HTTP/1.1\r\nHost: x\n\r\n", want: badRequest},
		{name: "Transfer-Encoding gzip",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n{}", want: badRequest},
		{name: "Transfer-Encoding gzip, chunked",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
			want: badRequest},
		{name: "two Transfer-Encoding lines",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
			want: badRequest},
		{name: "Transfer-Encoding on HTTP/1.0",
			send: "POST /v1/completions HTTP/1.0\r\nHost: x\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" +
				"2d\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n\r\n0\r\n\r\n",
			want: badRequest},
		{name: "bare LF in a chunked trailer",
			send: "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nX-T: a\n\r\n" +
				"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n",
			want: badRequest, mayReach: "POST /v1/completions"},
		{name: "absolute-form URI", do: absoluteForm, want: answer{status: 200}, reaches: "GET /v1/models"},
		{name: "Host of another host", do: otherHost, want: answer{status: 200}, reaches: "GET /v1/models"},
		{name: "CONNECT", do: connect,
			want: answer{status: 405, errType: "invalid_request_error", reason: "method_not_allowed", closed: true}},
		{name: "unknown method", send: "BREW /v1/models HTTP/1.1\r\nHost: x\r\n\r\n",
			want: answer{status: 405}, reaches: "BREW /v1/models"},
		{name: "HTTP/1.0 without keep-alive", send: "GET /v1/models HTTP/1.0\r\n\r\n",
			want: answer{status: 200, closed: true}, reaches: "GET /v1/models"},
		{name: "h2c upgrade", do: h2cUpgrade, want: answer{status: 200}, reaches: "GET /v1/models"},
		{name: "engine oversized headers", send: "GET /hostile/oversized-header HTTP/1.1\r\nHost: x\r\n\r\n",
			want: answer{status: 502, errType: "EngineError", reason: "engine_error"}, reaches: "GET /hostile/oversized-header"},
		{name: "engine malformed status line", send: "GET /hostile/bad-status HTTP/1.1\r\nHost: x\r\n\r\n",
			want: answer{status: 502, errType: "EngineError", reason: "engine_error"}, reaches: "GET /hostile/bad-status"},
		{name: "engine short body", send: "GET /hostile/short-body HTTP/1.1\r\nHost: x\r\n\r\n",
			want: answer{closed: true}, reaches: "GET /hostile/short-body"},
		{name: "idle connections", do: idleConnections, want: answer{status: 200}, reaches: "GET /v1/models"},
	}
	for _, tc := range cases {
		if tc.own {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				runBadCase(t, newFastBench(t, "--request-header-timeout", "1s"), tc)
			})
			continue
		}
		t.Run(tc.name, func(t *testing.T) { runBadCase(t, b, tc) })
	}
}

// newFastBench is newBench on the fasthttp plane: the same engine, decoy
// and limits, without the gRPC engine the plane refuses.
func newFastBench(t *testing.T, args ...string) *bench {
	t.Helper()
	b := &bench{eng: newRawEngine(t), decoy: newDecoy(t)}
	b.sg = start(t, b.eng.url(), nil, append([]string{"--data-plane", "fasthttp",
		"--engine-request-limit", strconv.Itoa(badSlots), "--request-queue-limit", "1",
		"--max-request-body-bytes", strconv.Itoa(badMaxBody), "--request-body-timeout", badBodyWait.String(),
		"--engine-metrics-dialect", "none", "--access-log=false"}, args...)...)
	b.addr = strings.TrimPrefix(b.sg.proxy, "http://")
	b.burst(t)
	return b
}
