package proxy_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/proxy"
)

// seenByBoth is what one side of TestPlainPathMatchesReverseProxy saw: the
// engine's request and the client's answer.
type seenByBoth struct {
	method, uri  string
	engineHeader http.Header
	status       int
	header       http.Header
	body         string
	trailer      http.Header
}

// TestPlainPathMatchesReverseProxy sends the same requests through the
// plain path (the default engine client) and through
// httputil.ReverseProxy (a Transport set, which the plain path never
// takes), and wants the engine and the client to see the same thing on
// both: hop-by-hop headers dropped both ways, forwarding headers
// replaced, an absent User-Agent left absent, "TE: trailers" kept, and
// trailers, announced or not, passed on.
func TestPlainPathMatchesReverseProxy(t *testing.T) {
	engine := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Engine", "yes")
		w.Header().Set("Connection", "x-engine-hop")
		w.Header().Set("X-Engine-Hop", "dropped")
		switch r.URL.Query().Get("answer") {
		case "trailers":
			w.Header().Set("Trailer", "X-Announced")
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"echo":%q}`, body)
			w.(http.Flusher).Flush()
			w.Header().Set("X-Announced", "a")
			w.Header().Set(http.TrailerPrefix+"X-Unannounced", "u")
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		case "empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"echo":%q}`, body)
		}
	})
	requests := []struct {
		name, method, query, body string
		header                    map[string]string
	}{
		{name: "POST with hop-by-hop and forwarding headers", method: http.MethodPost, query: "answer=json", body: "hello",
			header: map[string]string{"Connection": "x-foo", "X-Foo": "bar", "Keep-Alive": "timeout=5",
				"Forwarded": "for=1.2.3.4", "X-Forwarded-Host": "elsewhere", "X-Forwarded-For": "5.6.7.8", "X-Custom": "kept"}},
		{name: "no User-Agent", method: http.MethodPost, query: "answer=json", body: "x", header: map[string]string{"User-Agent": ""}},
		{name: "TE trailers, trailers both ways", method: http.MethodPost, query: "answer=trailers", body: "t",
			header: map[string]string{"Te": "trailers"}},
		{name: "event stream", method: http.MethodPost, query: "answer=sse", body: "s"},
		{name: "GET without a body", method: http.MethodGet, query: "answer=json"},
		{name: "HEAD", method: http.MethodHead, query: "answer=json"},
		{name: "no content", method: http.MethodPost, query: "answer=empty", body: "e"},
		{name: "an empty query, its ? kept", method: http.MethodPost, query: "", body: "q"},
		{name: "escapes kept", method: http.MethodPost, query: "answer=json&a=b%20c+d", body: "q"},
		{name: "a semicolon, re-encoded", method: http.MethodPost, query: "answer=json;a=b", body: "q"},
		{name: "too many parameters, re-encoded", method: http.MethodPost, query: "answer=json" + strings.Repeat("&a=1", 10000), body: "q"},
		{name: "just enough parameters", method: http.MethodPost, query: "answer=json" + strings.Repeat("&a=1", 9999), body: "q"},
		{name: "TE trailerſ, a Unicode fold of trailers, is not TE: trailers", method: http.MethodPost, query: "answer=trailers", body: "t",
			header: map[string]string{"Te": "trailerſ"}},
	}
	sides := map[string]func(*proxy.Options){
		"plain": nil,
		"reverse proxy": func(o *proxy.Options) {
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DisableCompression = true // no Accept-Encoding added
			o.Transport = tr
		},
	}
	seen := map[string][]seenByBoth{}
	for side, options := range sides {
		h := newHarness(t, harnessConfig{engine: engine, limits: limiter.Options{Slots: 4},
			// No relay: its own test compares streams.
			options: options})
		for _, rq := range requests {
			var body io.Reader
			if rq.body != "" {
				body = strings.NewReader(rq.body)
			}
			req := newRequest(t, rq.method, h.url("/v1/completions?"+rq.query), body)
			req.Header.Set("X-Request-Id", "same-id")
			for k, v := range rq.header {
				req.Header[k] = []string{v}
			}
			seen[side] = append(seen[side], sendAndSee(t, h, req))
		}
	}
	for i, rq := range requests {
		plain, rp := seen["plain"][i], seen["reverse proxy"][i]
		if !sameSeen(plain, rp) {
			t.Errorf("%s: plain path\n  %+v\nReverseProxy\n  %+v", rq.name, plain, rp)
		}
		if plain.status == 0 || plain.engineHeader.Get("X-Request-Id") != "same-id" {
			t.Errorf("%s: the engine did not get the request: %+v", rq.name, plain)
		}
	}
	// What both must do, beyond agreeing.
	first := seen["plain"][0]
	for _, k := range []string{"X-Foo", "Keep-Alive", "Forwarded"} {
		if v, ok := first.engineHeader[k]; ok {
			t.Errorf("the engine got %s: %q", k, v)
		}
	}
	if got := first.engineHeader.Get("X-Forwarded-For"); got != "5.6.7.8, 127.0.0.1" {
		t.Errorf("X-Forwarded-For = %q", got)
	}
	if _, ok := first.header["X-Engine-Hop"]; ok {
		t.Errorf("the client got the engine's hop-by-hop header: %v", first.header)
	}
	if ua, ok := seen["plain"][1].engineHeader["User-Agent"]; ok {
		t.Errorf("User-Agent made up: %q", ua)
	}
	if uri := seen["plain"][7].uri; uri != "/v1/completions?" {
		t.Errorf("an empty query reached the engine as %q, want its ? kept", uri)
	}
	tr := seen["plain"][2].trailer
	if tr.Get("X-Announced") != "a" || tr.Get("X-Unannounced") != "u" {
		t.Errorf("trailers = %v, want X-Announced: a and X-Unannounced: u", tr)
	}
}

// sendAndSee sends req through h and returns what the engine got and
// what the client read.
func sendAndSee(t *testing.T, h *harness, req *http.Request) seenByBoth {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), bound)
	defer cancel()
	resp, err := h.client.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", req.Method, req.URL, err)
	}
	s := seenByBoth{status: resp.StatusCode, header: resp.Header.Clone(), body: string(b), trailer: resp.Trailer}
	s.header.Del("Date")
	if r := h.engine.last("/v1/completions"); r != nil {
		s.method, s.uri, s.engineHeader = r.Method, r.RequestURI, r.Header.Clone()
		// Each side's own address, checked here and then left out.
		if got := s.engineHeader.Get("X-Forwarded-Host"); got != req.URL.Host {
			t.Errorf("%s %s: X-Forwarded-Host = %q, want %q", req.Method, req.URL, got, req.URL.Host)
		}
		s.engineHeader.Del("X-Forwarded-Host")
	}
	return s
}

func sameSeen(a, b seenByBoth) bool {
	eq := func(x, y http.Header) bool {
		return maps.EqualFunc(x, y, func(u, v []string) bool { return slices.Equal(u, v) })
	}
	return a.method == b.method && a.uri == b.uri && a.status == b.status &&
		a.body == b.body && eq(a.engineHeader, b.engineHeader) && eq(a.header, b.header) && eq(a.trailer, b.trailer)
}

// TestIsEventStream: the media type, parameters and ASCII case aside, as
// mime.ParseMediaType tells it; never a Unicode fold.
func TestIsEventStream(t *testing.T) {
	for ct, want := range map[string]bool{
		"text/event-stream":                true,
		"Text/Event-Stream; charset=utf-8": true,
		" text/event-stream ;x=y":          true,
		"text/event-\u017ftream":           false, // U+017F folds to s
		"text/plain":                       false,
		"text/event-streams":               false,
		"":                                 false,
	} {
		base, _, _ := mime.ParseMediaType(ct)
		if got := proxy.IsEventStream(ct); got != want || (base == "text/event-stream") != want {
			t.Errorf("IsEventStream(%q) = %v, mime.ParseMediaType gives %q; want %v", ct, got, base, want)
		}
	}
}
