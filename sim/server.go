package sim

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// Dialect is the engine whose load endpoints the server imitates.
type Dialect string

// The dialects.
const (
	// DialectVLLM: Prometheus text at GET /metrics with vLLM's vllm:* names.
	DialectVLLM Dialect = "vllm"
	// DialectSGLang: sglang:* Prometheus text at GET /metrics and the JSON
	// of GET /v1/loads.
	DialectSGLang Dialect = "sglang"
	// DialectTRTLLM: trtllm-serve's GET /metrics, a JSON array of iteration
	// stats drained on read.
	DialectTRTLLM Dialect = "trtllm"
)

// Dialects lists the dialects, in the order --help shows them.
func Dialects() []Dialect { return []Dialect{DialectVLLM, DialectSGLang, DialectTRTLLM} }

// DefaultModel is the served model name when ServerOptions.Model is empty.
const DefaultModel = "sim-model"

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 32 << 20

// ServerOptions configures NewHandler.
type ServerOptions struct {
	// Engine runs the requests; required. Its Run is the caller's to call.
	Engine *Engine
	// Model is the served model name; empty means DefaultModel. A request
	// naming another model gets 404, as in vLLM; one naming none is served.
	Model string
	// Dialect picks the load endpoints; empty means DialectVLLM. With
	// DialectTRTLLM the engine needs IterationStatsLimit > 0, or /metrics
	// stays empty.
	Dialect Dialect
	// Seed is mixed into every request's generation key.
	Seed uint64
	// Registry receives the dialect's Prometheus collector and enginesim's
	// own; nil means a new registry of the handler's own. Unused by
	// DialectTRTLLM, whose /metrics is JSON.
	Registry *prometheus.Registry
	// Faults injects faults into generation requests and is what
	// FaultsPath reads and replaces; nil means a Faults of the handler's
	// own that injects nothing until the admin call sets it. Share one with
	// GRPCOptions.Faults so that the admin call and the counts cover gRPC.
	Faults *Faults
	// Logger; nil means none.
	Logger *zap.Logger
}

// server holds what the handlers share.
type server struct {
	engine  *Engine
	model   string
	dialect Dialect
	seed    uint64
	created int64 // for /v1/models
	faults  *Faults
	log     *zap.Logger
}

// NewHandler returns the OpenAI-compatible handler: POST /v1/completions,
// POST /v1/chat/completions, GET /v1/models, GET /health, GET /version,
// POST /tokenize, the dialect's load endpoints, GET OwnMetricsPath
// (enginesim's own Prometheus series, also in a Prometheus dialect's
// /metrics), and the fault set's admin call at FaultsPath (GET, PUT, POST). Unknown paths get 404 and known paths with another method
// 405, each in OpenAI's error shape.
// It fails when the options are unusable or the collector cannot register.
func NewHandler(opts ServerOptions) (http.Handler, error) {
	if opts.Engine == nil {
		return nil, errors.New("sim: ServerOptions.Engine is required")
	}
	s := &server{
		engine: opts.Engine, model: opts.Model, dialect: opts.Dialect, seed: opts.Seed,
		created: time.Now().Unix(), faults: opts.Faults, log: opts.Logger,
	}
	if s.model == "" {
		s.model = DefaultModel
	}
	if s.dialect == "" {
		s.dialect = DialectVLLM
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.faults == nil {
		s.faults, _ = NewFaults(DefaultFaultSet(), opts.Seed) // a valid set: no error
	}
	rt := router{}
	rt.add(http.MethodPost, "/v1/completions", s.generate(false))
	rt.add(http.MethodPost, "/v1/chat/completions", s.generate(true))
	rt.add(http.MethodGet, "/v1/models", s.models)
	rt.add(http.MethodGet, "/health", s.health)
	rt.add(http.MethodGet, "/version", s.version)
	rt.add(http.MethodPost, "/tokenize", s.tokenize)
	s.addFaultRoutes(rt)
	if err := s.addLoadRoutes(rt, opts.Registry); err != nil {
		return nil, err
	}
	return rt, nil
}

// addLoadRoutes adds the dialect's /metrics (and /v1/loads for SGLang),
// and enginesim's own metrics at OwnMetricsPath.
func (s *server) addLoadRoutes(rt router, reg *prometheus.Registry) error {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if err := s.addOwnMetrics(rt); err != nil {
		return err
	}
	switch s.dialect {
	case DialectVLLM:
		return s.addPrometheus(rt, reg, vllmMetrics(s.model, s.engine.Options()))
	case DialectSGLang:
		rt.add(http.MethodGet, "/v1/loads", s.loads)
		return s.addPrometheus(rt, reg, sglangMetrics(s.model, s.engine.Options()))
	case DialectTRTLLM:
		rt.add(http.MethodGet, "/metrics", s.iterations)
		return nil
	}
	return fmt.Errorf("sim: unknown dialect %q (want one of %v)", s.dialect, Dialects())
}

// router dispatches on the exact path, then the method.
type router map[string]map[string]http.HandlerFunc

func (rt router) add(method, path string, h http.HandlerFunc) {
	if rt[path] == nil {
		rt[path] = map[string]http.HandlerFunc{}
	}
	rt[path][method] = h
}

func (rt router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	byMethod, ok := rt[r.URL.Path]
	if !ok {
		writeError(w, http.StatusNotFound, "Not Found: "+r.URL.Path)
		return
	}
	h, ok := byMethod[r.Method]
	if !ok {
		allowed := make([]string, 0, len(byMethod))
		for m := range byMethod {
			allowed = append(allowed, m)
		}
		slices.Sort(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("Method %s not allowed for %s", r.Method, r.URL.Path))
		return
	}
	h(w, r)
}
