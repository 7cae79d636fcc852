package admin_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// statusPolicy is the Content-Security-Policy the page must be served with.
const statusPolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func TestStatusPageRoute(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name, method, path string
		status             int
		bodyHas            string
	}{
		{"the page at the root", http.MethodGet, "/", http.StatusOK, "<title>slotgate status</title>"},
		{"HEAD answers the headers", http.MethodHead, "/", http.StatusOK, ""},
		{"only the root", http.MethodGet, "/index.html", http.StatusNotFound, ""},
		{"an unknown path stays unknown", http.MethodGet, "/nope", http.StatusNotFound, ""},
		{"metrics unchanged", http.MethodGet, "/metrics", http.StatusOK, "fake_metric 1"},
		{"read-only", http.MethodPost, "/", http.StatusMethodNotAllowed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, tt.method, tt.path)
			if resp.StatusCode != tt.status {
				t.Fatalf("%s %s: status %d, want %d; body %q", tt.method, tt.path, resp.StatusCode, tt.status, body)
			}
			if !strings.Contains(body, tt.bodyHas) {
				t.Errorf("%s %s: body does not contain %q", tt.method, tt.path, tt.bodyHas)
			}
			if tt.path != "/" || tt.status != http.StatusOK {
				return
			}
			for header, want := range map[string]string{
				"Content-Type":            "text/html; charset=utf-8",
				"Cache-Control":           "no-store",
				"Content-Security-Policy": statusPolicy,
				"X-Content-Type-Options":  "nosniff",
			} {
				if got := resp.Header.Get(header); got != want {
					t.Errorf("%s: %q, want %q", header, got, want)
				}
			}
		})
	}
}

// TestStatusPageNeedsNoToken checks that the token middleware leaves the
// read-only page open, as it does /metrics, and still guards the rest.
func TestStatusPageNeedsNoToken(t *testing.T) {
	dir := t.TempDir()
	f := newAuthFixture(t, newToken(t, writeFile(t, dir, "token", goodToken), nil))
	tests := []struct {
		name, method, path, auth string
		status                   int
	}{
		{"page without a token", http.MethodGet, "/", "", http.StatusOK},
		{"page with a wrong token", http.MethodGet, "/", "Bearer " + otherToken, http.StatusOK},
		{"metrics without a token", http.MethodGet, "/metrics", "", http.StatusOK},
		{"drain still guarded", http.MethodPost, "/drain", "", http.StatusUnauthorized},
		{"POST / guarded before the mux", http.MethodPost, "/", "", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := f.do(tt.method, tt.path, tt.auth)
			if rec.Code != tt.status {
				t.Fatalf("%s %s: status %d, want %d", tt.method, tt.path, rec.Code, tt.status)
			}
		})
	}
}

// statusPageBody fetches the page as a browser would.
func statusPageBody(t *testing.T) string {
	t.Helper()
	resp, body := newFixture(t).do(t, http.MethodGet, "/")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: status %d", resp.StatusCode)
	}
	return body
}

// TestStatusPageIsSelfContained checks that the page loads nothing from
// anywhere but the admin port: no absolute or scheme-relative URL in an
// attribute, a CSS url() or the script (the CSP would block one, leaving
// a broken page rather than a failing test).
func TestStatusPageIsSelfContained(t *testing.T) {
	page := statusPageBody(t)
	tests := []struct {
		name string
		bad  *regexp.Regexp
	}{
		{"absolute URL", regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://`)},
		{"scheme-relative src, href or action", regexp.MustCompile(`(?i)\b(src|href|action)\s*=\s*["']?\s*//`)},
		{"scheme-relative string in the script", regexp.MustCompile("[\"'`]\\s*//")},
		{"CSS url()", regexp.MustCompile(`(?i)url\(`)},
		{"CSS @import", regexp.MustCompile(`(?i)@import`)},
		{"external script or stylesheet", regexp.MustCompile(`(?i)<script[^>]+src=|<link[^>]+stylesheet`)},
		{"fetch or EventSource of an absolute path", regexp.MustCompile(`(?:EventSource|fetch)\(\s*["'/]`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m := tt.bad.FindString(page); m != "" {
				t.Errorf("the page holds %q", m)
			}
		})
	}
}

// browserFields are the element ids whose figures the browser test in
// interop/statuspage_test.go reads; the two lists must stay in step.
var browserFields = []string{
	"conn", "seq", "slots-in-use", "slots-limit", "prefilling", "waiting-limit", "queued", "queue-limit",
	"dialect", "engine-stale", "worker-busy", "threshold-decode-blocks", "threshold-prefill-tokens",
	"threshold-prefill-frac", "reject-rate-total", "served-rate", "ttfb-p50", "ttfb-p99", "kv-ranks-body",
}

// rowFields are the data-field names of the rows the page builds per rank
// and per rejection reason, which the browser test reads too.
var rowFields = []string{"kv-used", "kv-total", "kv-pct", "rank-busy", "rank-in-flight", "rank-limit", "reject-rate"}

func TestStatusPageFields(t *testing.T) {
	page := statusPageBody(t)
	for _, id := range browserFields {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("no element with id %q", id)
		}
	}
	for _, name := range rowFields {
		if !strings.Contains(page, `data-field="`+name+`"`) {
			t.Errorf("no element with data-field %q", name)
		}
	}
	// Every id and row field the script writes must exist, or the
	// script stops at the first one missing and the page freezes.
	ids := regexp.MustCompile(`(?:byId|field)\("([^"]+)"`).FindAllStringSubmatch(page, -1)
	cells := regexp.MustCompile(`inRow\(row, "([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(ids) < len(browserFields) || len(cells) < len(rowFields) {
		t.Fatalf("found %d ids and %d row fields written by the script: the patterns no longer match it", len(ids), len(cells))
	}
	for _, m := range ids {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("the script uses id %q, which no element has", m[1])
		}
	}
	for _, m := range cells {
		if !strings.Contains(page, `data-field="`+m[1]+`"`) {
			t.Errorf("the script writes data-field %q, which no element has", m[1])
		}
	}
}
