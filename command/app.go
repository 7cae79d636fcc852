package command

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/slotgate/slotgate/admin"
	"github.com/slotgate/slotgate/admission/policy"
	"github.com/slotgate/slotgate/config"
	"github.com/slotgate/slotgate/engine"
	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/health"
	"github.com/slotgate/slotgate/internal/logging"
	"github.com/slotgate/slotgate/limiter"
	"github.com/slotgate/slotgate/load/orcagrpc"
	"github.com/slotgate/slotgate/metrics"
	"github.com/slotgate/slotgate/proxy"
	"github.com/slotgate/slotgate/relay"
)

// app is the wired process: every part, built from the configuration, and
// nothing started yet.
type app struct {
	cfg    config.Config
	log    *zap.Logger
	lims   *gate.Limiters
	engine *engine.Client
	proxy  *proxy.Proxy
	prober *health.Prober
	drain  *drainer
	load   *loadParts
	grpc   *grpcParts
	relay  *relay.Relay // nil: --stream-relay off
	// stopEarly ends the proxy listener's early answers before the
	// server shuts down (strict_early.go).
	stopEarly func()

	proxyServer, adminServer *http.Server
}

// Interface guard: the metrics implement what the gate reports to.
var _ gate.Observer = (*metrics.Metrics)(nil)

func newApp(cfg config.Config, opts Options, pol *policy.Config, log, access *zap.Logger) (*app, error) {
	lims, err := newLimiters(cfg, pol)
	if err != nil {
		return nil, err
	}
	// One engine client for the proxy, the prober and the scraper: one
	// configuration, never an environment proxy.
	ec, err := engine.New(engine.Options{URL: cfg.EngineURL, Pool: proxy.PoolSize(lims.Stats())})
	if err != nil {
		return nil, err
	}
	lp, err := newLoadParts(cfg, lims, ec.HTTPClient(), log)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Options{
		Limiter: lims.Stats, Outcomes: gate.Outcomes(), Protocols: gate.Protocols(), Classes: classNames(pol), Load: lp.hub.Latest, Version: opts.Version, Revision: opts.Commit,
	})
	if err != nil {
		return nil, err
	}
	g, err := newGate(cfg, lims, pol, lp, m, log)
	if err != nil {
		return nil, err
	}
	popts := proxy.Options{
		Engine:              cfg.EngineURL,
		Gate:                g,
		Client:              ec,
		OverloadStatus:      cfg.OverloadStatus,
		RetryAfter:          cfg.RetryAfter,
		MaxRequestBodyBytes: cfg.MaxRequestBodyBytes,
		// 0 in the config reads no queued body; 0 here is the default.
		MaxBufferedBodyBytes: cmp.Or(cfg.MaxBufferedBodyBytes, -1),
		RequestBodyTimeout:   cfg.RequestBodyTimeout,
		FirstToken:           proxy.FirstToken{Timeout: cfg.FirstTokenTimeout, Per1KTokens: cfg.FirstTokenTimeoutPer1K},
		PassthroughPaths:     cfg.PassthroughPaths,
		Logger:               log.Named("proxy"),
		AccessLog:            access,
	}
	if cfg.ServeEngineMetrics {
		popts.FrontPaths = []string{engineMetricsPath} // withEngineMetrics serves it
	}
	popts.LoadReport = &proxy.LoadReport{Key: orcagrpc.HeaderKey, Value: lp.orcaReport,
		RequestHeaders: []string{orcagrpc.FormatHeader}}
	a := &app{cfg: cfg, log: log, lims: lims, engine: ec, load: lp}
	if cfg.StreamRelay == "epoll" {
		if a.relay, err = relay.New(cfg.RelayLoops); err != nil {
			return nil, err
		}
		popts.Relay = &proxy.Relay{Loops: a.relay, Resume: func(c net.Conn) { proxy.Resume(a.proxyServer, c) }, Idle: proxyIdleTimeout}
	}
	p, err := proxy.New(popts)
	if err != nil {
		return nil, err
	}
	prober, err := health.New(health.Options{
		URL: cfg.EngineURL.JoinPath(cfg.EngineHealthPath).String(), Client: ec.HTTPClient(), Logger: log.Named("health"),
	})
	if err != nil {
		return nil, err
	}
	a.proxy, a.prober = p, prober
	a.drain = newDrainer(log.Named("drain"), p.CloseConnections)
	if err := reg.Register(metrics.Readiness(a.ready, a.drain.started)); err != nil {
		return nil, fmt.Errorf("metrics: register readiness: %w", err)
	}
	if a.relay != nil {
		if err := reg.Register(metrics.Relay(a.relay.Open, a.relay.Added, a.relay.Parked)); err != nil {
			return nil, fmt.Errorf("metrics: register the relay's: %w", err)
		}
	}
	orca, err := lp.orcaService(a.drain.begun)
	if err != nil {
		return nil, err
	}
	deps := grpcDeps{gate: g, ready: a.ready, draining: a.drain.begun, orca: orca}
	if cfg.ORCAHeader {
		deps.trailer = lp.orcaGRPC.Trailer
	}
	if a.grpc, err = newGRPCParts(cfg, deps, log); err != nil {
		return nil, err
	}
	token, err := newAdminToken(cfg, log)
	if err != nil {
		return nil, err
	}
	adminHandler, err := admin.NewHandler(admin.Options{
		Metrics: metrics.Handler(reg), Ready: a.ready, Drain: a.drain.start, Routes: a.adminRoutes(),
		Profiling: cfg.EnableProfiling, Token: token,
	})
	if err != nil {
		return nil, err
	}
	a.proxyServer = newProxyServer(proxy.Strict(protocolMux{http: withEngineMetrics(cfg, lp, lims, p), grpc: a.grpc.srv, closing: p.Closing}), cfg.RequestHeaderTimeout, log)
	a.adminServer = newAdminServer(adminHandler, log)
	return a, nil
}

// newAdminToken reads --admin-token-file, which the admin port's mutating
// calls then need, and logs whether they do (never the token). A file that
// cannot be read, or is empty, refuses the configuration.
func newAdminToken(cfg config.Config, log *zap.Logger) (*admin.Token, error) {
	if cfg.AdminTokenFile == "" {
		log.Info("admin auth off: mutating admin calls need no token; keep the admin port on a pod-local address",
			zap.String("admin_listen", cfg.AdminListen))
		return nil, nil
	}
	token, err := admin.NewToken(cfg.AdminTokenFile, log.Named("admin"))
	if err != nil {
		return nil, configError{fmt.Errorf("%s: %w", flagName(cfg, "admin-token-file"), err)}
	}
	log.Info("admin auth on: mutating admin calls need the bearer token", zap.String("admin_token_file", cfg.AdminTokenFile))
	return token, nil
}

// configError is a setting refused once it is used, such as a file that
// cannot be read: Run reports it as it reports a bad flag, with exit
// status 2.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }
func (e configError) Unwrap() error { return e.err }

// newGate builds the admission every protocol goes through.
func newGate(cfg config.Config, lims *gate.Limiters, pol *policy.Config, lp *loadParts, m *metrics.Metrics, log *zap.Logger) (*gate.Gate, error) {
	opts := gate.Options{
		Limiters: lims, Policy: gatePolicy(pol), Flights: lp.flights, Changed: lp.notify, Observer: m,
		Logger: logging.Slog(log.Named("proxy")), AbortGrace: cfg.AbortGrace, NoAbortGrace: cfg.AbortGrace == 0,
		PaceRetryAfter: cfg.RetryAfterAuto,
	}
	if cfg.RejectWhenBusy {
		opts.Busy = lp.busy.Load
	}
	return gate.New(opts)
}

// newLimiters builds admission's limiters: none with a cap when no engine
// limit is set (a pure pass-through), one for the engine, or one per
// data-parallel rank with --per-rank-limits.
func newLimiters(cfg config.Config, pol *policy.Config) (*gate.Limiters, error) {
	if !cfg.GateOn() {
		return gate.EngineLimiter(limiter.NewUnlimited()), nil
	}
	newLim := func() (*limiter.Limiter, error) {
		return limiter.New(limiter.Options{
			Slots: cfg.EngineRequestLimit, WaitingLimit: cfg.EngineRequestWaitingLimit,
			QueueLen: cfg.RequestQueueLimit, QueueTimeout: cfg.QueueTimeout, AdaptiveLIFO: cfg.QueueAdaptiveLIFO,
			PrefillTokenLimit: cfg.EnginePrefillTokenLimit, QueueTokenLimit: cfg.RequestQueueTokenLimit,
			Classes: limiterClasses(pol),
		})
	}
	if cfg.PerRankLimits {
		return gate.RankLimiters(max(cfg.DataParallelSize, 1), newLim)
	}
	l, err := newLim()
	if err != nil {
		return nil, err
	}
	return gate.EngineLimiter(l), nil
}

// ready is /readyz: not draining, and the engine answered its health path
// recently.
func (a *app) ready() error {
	if a.drain.started() {
		return errors.New("draining")
	}
	if err := a.prober.Ready(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// proxyIdleTimeout is how long the proxy port keeps an idle connection,
// in net/http or parked in the relay after a stream.
const proxyIdleTimeout = 5 * time.Minute

// newProxyServer serves the proxy over HTTP/1.1 and cleartext HTTP/2. It
// has a header timeout (--request-header-timeout) but no read or write
// timeout: a stream may last as long as a generation does, and the body's
// own deadline is the proxy's (--request-body-timeout).
func newProxyServer(h http.Handler, headerTimeout time.Duration, log *zap.Logger) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       proxyIdleTimeout,
		MaxHeaderBytes:    1 << 20,
		ConnContext:       proxy.ConnContext, // lets the proxy see a departed client at once
		ErrorLog:          zap.NewStdLog(log.Named("proxy.server")),
	}
}

func newAdminServer(h http.Handler, log *zap.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          zap.NewStdLog(log.Named("admin.server")),
	}
}

// listeners are the ports slotgate serves; grpc is nil when
// --admin-grpc-listen is off, grpcProxy when --grpc-listen is unset.
type listeners struct {
	proxy, admin, grpc, grpcProxy net.Listener
}

// listen binds every port before anything is served, so that a port in use
// fails start-up rather than part of it.
func (a *app) listen() (listeners, error) {
	var ls listeners
	binds := []struct {
		ln         *net.Listener
		flag, addr string
	}{
		{&ls.proxy, flagName(a.cfg, "listen"), a.cfg.Listen},
		{&ls.admin, flagName(a.cfg, "admin-listen"), a.cfg.AdminListen},
		{&ls.grpc, flagName(a.cfg, "admin-grpc-listen"), a.cfg.AdminGRPCListen},
		{&ls.grpcProxy, flagName(a.cfg, "grpc-listen"), a.cfg.GRPCListen},
	}
	for i, b := range binds {
		if b.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", b.addr)
		if err != nil {
			for _, prev := range binds[:i] {
				if *prev.ln != nil {
					(*prev.ln).Close()
				}
			}
			return listeners{}, fmt.Errorf("listen on %s %s: %w", b.flag, b.addr, err)
		}
		*b.ln = ln
	}
	return ls, nil
}
