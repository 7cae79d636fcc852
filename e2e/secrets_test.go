package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The secrets a client sends, each distinct so that a leak names its
// source, and a marker that every request body carries.
const (
	secretAuthz     = "sk-secret-AUTHZ-4f1d2e"
	secretAPIKey    = "sk-secret-APIKEY-8c3b7a"
	secretXAPIKey   = "sk-secret-XAPIKEY-1e9d4c"
	secretCookie    = "sk-secret-COOKIE-6a2f0b"
	secretProxyAuth = "sk-secret-PROXYAUTH-3d7e5f"
	secretQuery     = "sk-secret-QUERY-9b8a7c" // as some clients send an API key: ?key=
	bodyMarker      = "BODY-MARKER-c0ffee-5ec7e7"
)

var secretHeaders = map[string]string{
	"Authorization":       "Bearer " + secretAuthz,
	"Api-Key":             secretAPIKey,
	"X-Api-Key":           secretXAPIKey,
	"Cookie":              "session=" + secretCookie + "; other=1",
	"Proxy-Authorization": "Basic " + secretProxyAuth,
}

// secretStrings must appear in no log line and no answer slotgate writes.
var secretStrings = []string{secretAuthz, secretAPIKey, secretXAPIKey, secretCookie, secretProxyAuth, secretQuery, bodyMarker}

// secretsEngine answers completions without echoing anything of the
// request; /break closes the connection without an answer (a 502); /hold
// keeps the request until its client leaves.
type secretsEngine struct {
	srv       *httptest.Server
	held      chan struct{} // one value per request that reached /hold
	sawSecret atomic.Int64  // requests that arrived with the Authorization secret
}

func newSecretsEngine(t *testing.T) *secretsEngine {
	e := &secretsEngine{held: make(chan struct{}, 8)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == secretHeaders["Authorization"] {
			e.sawSecret.Add(1)
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			// A body broken on its way: no answer, so that slotgate's
			// own (400) is the one the client gets.
			panic(http.ErrAbortHandler)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"choices":[{"text":"ok"}]}`)
	})
	mux.HandleFunc("POST /break", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	mux.HandleFunc("POST /hold", func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		e.held <- struct{}{}
		<-r.Context().Done()
	})
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

// secretRequest builds a request to path carrying every secret and body.
func secretRequest(ctx context.Context, t *testing.T, base, path string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path+"?key="+secretQuery, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range secretHeaders {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// markedBody is a JSON body of about n bytes holding the marker.
func markedBody(n int) string {
	b := `{"prompt":"` + bodyMarker + `","pad":"`
	return b + strings.Repeat(bodyMarker[:1], max(n-len(b)-2, 0)) + `"}`
}

// secretsRun sends requests and records what slotgate answered.
type secretsRun struct {
	t       *testing.T
	sg      *sidecar
	answers []string // status and body of each answer
}

// idle waits until the one slot is free: an answer can reach the client
// a moment before its request gives the slot back.
func (s *secretsRun) idle() {
	s.t.Helper()
	eventually(s.t, "the slot free", func() bool { return s.sg.metric("dynamo_engine_request") == 0 })
}

// send sends req and checks its status.
func (s *secretsRun) send(client *http.Client, req *http.Request, want int) {
	s.t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		s.t.Errorf("%s: %v, want %d", req.URL.Path, err, want)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Errorf("%s: status %d, want %d; body %s", req.URL.Path, resp.StatusCode, want, b)
	}
	s.answers = append(s.answers, fmt.Sprintf("%d %v %s", resp.StatusCode, resp.Header, b))
}

// sendRaw writes a raw HTTP/1.1 request and records the answer's status
// line, headers and body.
func (s *secretsRun) sendRaw(raw string, want int) {
	s.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.sg.proxy, "http://"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		s.t.Fatalf("raw request: read answer: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Errorf("raw request: status %d, want %d; body %s", resp.StatusCode, want, b)
	}
	s.answers = append(s.answers, fmt.Sprintf("%d %v %s", resp.StatusCode, resp.Header, b))
}

// rawSecretHeaders are the secrets as raw header lines.
func rawSecretHeaders() string {
	var b strings.Builder
	for k, v := range secretHeaders {
		b.WriteString(k + ": " + v + "\r\n")
	}
	return b.String()
}

// TestSecretsNeverLogged sends requests carrying credentials (headers,
// cookie, query) and a marked body through slotgate at debug level, on
// every path that answers: success, 413 (declared and streamed), 400, 502,
// 529, a client that leaves (499) and 503 (engine down). Neither slotgate's
// whole output (access log included, flushed by a clean exit) nor any
// answer it wrote may show a secret or the marker.
func TestSecretsNeverLogged(t *testing.T) {
	t.Parallel()
	eng := newSecretsEngine(t)
	sg := start(t, eng.srv.URL, nil, "--engine-request-limit", "1", "--request-queue-limit", "0",
		"--max-request-body-bytes", "4096", "--log-level", "debug", "--drain-delay", "0s")
	eventually(t, "ready", func() bool { s, _ := get(t, sg.admin+"/readyz"); return s == http.StatusOK })
	run := &secretsRun{t: t, sg: sg}
	ctx := t.Context()
	client := &http.Client{}

	run.idle()
	run.send(client, secretRequest(ctx, t, sg.proxy, "/v1/completions", strings.NewReader(markedBody(200))), http.StatusOK)
	if eng.sawSecret.Load() != 1 {
		t.Fatalf("the engine got the Authorization header %d times, want 1: slotgate must pass it on", eng.sawSecret.Load())
	}
	// 413: a declared length over the limit, then a chunked body that
	// grows over it.
	run.idle()
	run.send(client, secretRequest(ctx, t, sg.proxy, "/v1/completions", strings.NewReader(markedBody(8192))),
		http.StatusRequestEntityTooLarge)
	chunked := secretRequest(ctx, t, sg.proxy, "/v1/completions", io.MultiReader(strings.NewReader(markedBody(8192))))
	chunked.ContentLength = -1
	run.idle()
	run.send(client, chunked, http.StatusRequestEntityTooLarge)
	// 400: a chunked body that breaks its framing.
	bad := markedBody(100)
	run.idle()
	run.sendRaw("POST /v1/completions?key="+secretQuery+" HTTP/1.1\r\nHost: x\r\n"+rawSecretHeaders()+
		"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"+fmt.Sprintf("%x\r\n%s\r\nzz\r\n", len(bad), bad),
		http.StatusBadRequest)
	// 502: the engine closes the connection without an answer.
	run.idle()
	run.send(client, secretRequest(ctx, t, sg.proxy, "/break", strings.NewReader(markedBody(200))), http.StatusBadGateway)

	// 529 while the one slot is held; then the holder leaves (499).
	run.idle()
	holdCtx, leave := context.WithCancel(ctx)
	left := make(chan struct{})
	go func() {
		defer close(left)
		// The client leaves, so there is no answer to record or check.
		resp, err := client.Do(secretRequest(holdCtx, t, sg.proxy, "/hold", strings.NewReader(markedBody(200))))
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-eng.held:
	case <-time.After(waitLimit):
		t.Fatalf("the held request did not reach the engine within %s", waitLimit)
	}
	run.send(client, secretRequest(ctx, t, sg.proxy, "/v1/completions", strings.NewReader(markedBody(200))), 529)
	leave()
	<-left

	// 503: the engine is down.
	eng.srv.Close()
	run.idle()
	run.send(client, secretRequest(ctx, t, sg.proxy, "/v1/completions", strings.NewReader(markedBody(200))),
		http.StatusServiceUnavailable)

	sg.signal(syscall.SIGTERM)
	if code := sg.wait(); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
	out := sg.log.String()
	// The lines the secrets could have reached are there: one access line
	// per request, with each status.
	for _, status := range []int{200, 413, 400, 502, 529, 499, 503} {
		if len(linesWith(out, `"msg":"request"`, fmt.Sprintf(`"status":%d,`, status))) == 0 {
			t.Errorf("no access-log line of status %d", status)
		}
	}
	if n := len(linesWith(out, `"msg":"request"`)); n != 8 {
		t.Errorf("%d access-log lines, want 8", n)
	}
	for _, secret := range secretStrings {
		for _, line := range linesWith(out, secret) {
			t.Errorf("slotgate logged %q: %s", secret, line)
		}
		for _, a := range run.answers {
			if strings.Contains(a, secret) {
				t.Errorf("slotgate answered with %q: %s", secret, a)
			}
		}
	}
}

// linesWith returns the lines of out that contain every one of substrs.
func linesWith(out string, substrs ...string) []string {
	var lines []string
	for line := range strings.Lines(out) {
		ok := true
		for _, s := range substrs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}
