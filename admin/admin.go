package admin

import (
	"errors"
	"net/http"
	"net/http/pprof"
)

// Options configure the admin handler.
type Options struct {
	// Metrics serves /metrics. Required.
	Metrics http.Handler
	// Ready returns nil when the sidecar should receive traffic, and the
	// reason otherwise. Required.
	Ready func() error
	// Drain starts draining; it must return at once and be safe to call
	// more than once. Required.
	Drain func()
	// Routes are further handlers by http.ServeMux pattern, such as
	// "GET /v1/load"; they must not repeat the ones above.
	Routes map[string]http.Handler
	// Profiling serves Go's pprof profiles under /debug/pprof/. They are
	// off by default: a CPU profile costs the proxy while it runs, and the
	// admin port is reachable by whatever scrapes the metrics.
	Profiling bool
	// Token, when set, must be carried by every request but a GET or a
	// HEAD (POST /drain, POST /limits, POST /busy_threshold, and any route
	// added later): the others answer 401 without reaching their handler.
	// nil leaves the port open, for a pod-local address.
	Token *Token
}

// NewHandler returns the admin port's handler.
func NewHandler(opts Options) (http.Handler, error) {
	if opts.Metrics == nil || opts.Ready == nil || opts.Drain == nil {
		return nil, errors.New("admin: metrics, ready and drain are required")
	}
	mux := http.NewServeMux()
	for pattern, h := range opts.Routes {
		mux.Handle(pattern, h)
	}
	mux.Handle("GET /metrics", opts.Metrics)
	mux.Handle(statusPattern, statusPage())
	if opts.Profiling {
		addProfiling(mux)
	}
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := opts.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
			return
		}
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("POST /drain", func(w http.ResponseWriter, _ *http.Request) {
		opts.Drain()
		writeText(w, http.StatusAccepted, "draining")
	})
	if opts.Token != nil {
		return requireToken(mux, opts.Token), nil
	}
	return mux, nil
}

func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// addProfiling registers net/http/pprof's handlers on mux: slotgate never
// serves http.DefaultServeMux, where importing the package also puts them.
func addProfiling(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
