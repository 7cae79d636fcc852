package admin

import (
	_ "embed" // the status page is compiled into the binary
	"io"
	"net/http"
)

// statusPattern serves the status page at the admin port's root, and only
// there: every other path keeps its own answer (404 for an unknown one).
const statusPattern = "GET /{$}"

// statusHTML is the live status page: one self-contained document, its
// CSS and JavaScript inline, so it needs no build step and no network
// beyond the admin port itself. It reads GET /v1/load/stream for the load
// and GET /metrics for request rates and time to first byte.
//
//go:embed status.html
var statusHTML string

// statusPolicy lets the page run its own inline script and style and talk
// to the admin port it came from, and nothing else: no external script,
// style, font, frame or form target, and no embedding in another site's
// frame.
const statusPolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// statusPage answers the status page. It is read-only, like /metrics, so
// it takes no token: the token middleware lets every GET through.
func statusPage() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", statusPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		_, _ = io.WriteString(w, statusHTML)
	})
}
