package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/slotgate/slotgate/bench/configs"
)

// A target is one way to reach the engine: directly, or through a proxy
// capped at N slots and a queue of Q.
type target struct {
	name string
	up   upFunc
}

// upFunc starts a target in front of the engine at up.
type upFunc func(ctx context.Context, up upstream, n, q int) (*instance, error)

// upstream is the engine the targets forward to.
type upstream struct {
	http string // host:port of its HTTP API
	grpc string // host:port of its gRPC API; "" for the HTTP stand-in
}

// instance is one started target.
type instance struct {
	addr string // host:port the client talks to
	// proxy is slotgate's proxy port (--listen), which takes gRPC calls
	// too; addr is its --grpc-listen port in the gRPC scenario. "" for
	// the others.
	proxy string
	pid   int // the proxy's process, 0 for direct
	// admin is slotgate's admin host:port (its pprof profiles); "" for
	// the others.
	admin string
	// queued reads how many requests the proxy holds in its queue now; nil
	// when it has none (direct, nginx).
	queued func(ctx context.Context) (int, error)
	stop   func()
}

// env is what starting a target needs.
type env struct {
	procs       *procs
	run         string   // scratch folder for configs and logs
	slotgateBin string   // path of the slotgate binary
	baseBins    []string // paths of the slotgate-base binaries (--base-bin)
	enginesim   string   // path of the enginesim binary, the gRPC scenario's engine; "": none
	haproxy     string
	nginx       string
	wrk         string // wrk binary; "": the wrk scenario is skipped
	// only, when set (--targets), replaces every scenario's targets.
	only []string
	// nginxHTTP2On says the nginx found takes `http2 on` (1.25.1 and
	// later), for its gRPC config.
	nginxHTTP2On bool
	// cpuProfile profiles every slotgate target's runs (--cpu-profile).
	cpuProfile bool
}

// defaultTargets are the targets a scenario runs on unless it names its
// own.
var defaultTargets = []string{"direct", "slotgate", "haproxy", "nginx"}

// targets returns the targets named, in that order, leaving out the peers
// that are not installed: the HTTP ones, or with grpc the ones that
// forward gRPC (h2c) to the engine's gRPC port.
func (e *env) targets(names []string, grpc bool) []target {
	all := map[string]upFunc{
		"direct": func(_ context.Context, up upstream, _, _ int) (*instance, error) {
			addr := up.http
			if grpc {
				addr = up.grpc
			}
			return &instance{addr: addr, stop: func() {}}, nil
		},
	}
	if e.slotgateBin != "" {
		all["slotgate"] = e.upSlotgate
		all["slotgate-1p"] = e.upSlotgateOneProc
		if !grpc {
			all["slotgate-nethttp"] = e.upSlotgateNetHTTP
		} else {
			all["slotgate-proxyport"] = e.upSlotgateProxyPort
		}
	}
	for i, bin := range e.baseBins {
		name := baseName(i)
		all[name] = func(ctx context.Context, up upstream, n, q int) (*instance, error) {
			return e.upSlotgateFrom(ctx, bin, name, up, n, q)
		}
	}
	if len(e.only) > 0 {
		names = e.only
	}
	if e.haproxy != "" && grpc {
		all["haproxy"] = e.upHAProxyGRPC
	} else if e.haproxy != "" {
		all["haproxy"] = e.upHAProxy(true)
		all["haproxy-maxqueue"] = e.upHAProxy(false)
	}
	if e.nginx != "" && grpc {
		all["nginx"] = e.upNginxGRPC
	} else if e.nginx != "" {
		all["nginx"] = e.upNginx
	}
	var ts []target
	for _, n := range names {
		if up, ok := all[n]; ok {
			ts = append(ts, target{n, up})
		}
	}
	return ts
}

// upSlotgate starts slotgate in front of up's HTTP API and, when up has
// one, its gRPC API, which slotgate then takes on a port of its own
// (--grpc-listen, grpc-go's own server), as the deploy manifests run it.
func (e *env) upSlotgate(ctx context.Context, up upstream, n, q int) (*instance, error) {
	return e.upSlotgateWith(ctx, "slotgate", up, n, q)
}

// upSlotgateNetHTTP starts slotgate with its stream relay off
// (--stream-relay off: net/http carries every stream, as before issue
// 17), HTTP only, to compare the two stream paths in one run.
func (e *env) upSlotgateNetHTTP(ctx context.Context, up upstream, n, q int) (*instance, error) {
	return e.upSlotgateWith(ctx, "slotgate-nethttp", up, n, q, "--stream-relay", "off")
}

// upSlotgateProxyPort starts slotgate as upSlotgate does, for the gRPC
// scenario, with the calls sent to its proxy port instead: net/http's h2c
// server hands them to grpc-go's ServeHTTP, the slower of slotgate's two
// gRPC paths.
func (e *env) upSlotgateProxyPort(ctx context.Context, up upstream, n, q int) (*instance, error) {
	in, err := e.upSlotgateWith(ctx, "slotgate-proxyport", up, n, q)
	if err != nil {
		return nil, err
	}
	in.addr = in.proxy
	return in, nil
}

// upSlotgateOneProc starts slotgate on one processor (--max-procs 1), as
// the Helm chart runs it at its default CPU request of 500m.
func (e *env) upSlotgateOneProc(ctx context.Context, up upstream, n, q int) (*instance, error) {
	return e.upSlotgateWith(ctx, "slotgate-1p", up, n, q, "--max-procs", "1")
}

// baseName names the target of the i-th --base-bin binary, started as
// slotgate is, to compare builds in one run: slotgate-base, then
// slotgate-base2, slotgate-base3 and so on.
func baseName(i int) string {
	if i == 0 {
		return "slotgate-base"
	}
	return fmt.Sprintf("slotgate-base%d", i+1)
}

// upSlotgateWith starts slotgate, named name in the logs, with extra
// arguments.
func (e *env) upSlotgateWith(ctx context.Context, name string, up upstream, n, q int, extra ...string) (*instance, error) {
	return e.upSlotgateFrom(ctx, e.slotgateBin, name, up, n, q, extra...)
}

// upSlotgateFrom starts the slotgate binary bin, named name in the logs,
// with extra arguments.
func (e *env) upSlotgateFrom(ctx context.Context, bin, name string, up upstream, n, q int, extra ...string) (*instance, error) {
	ports, err := freePorts(3) // the proxy's, the admin's, the gRPC listener's
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	admin := "127.0.0.1:" + strconv.Itoa(ports[1])
	args := []string{
		"--listen", addr,
		"--admin-listen", admin,
		"--admin-grpc-listen", "off",
		"--engine-url", "http://" + up.http,
		"--engine-request-limit", strconv.Itoa(n),
		"--request-queue-limit", strconv.Itoa(q),
		"--engine-metrics-dialect", "none",
		"--log-level", "warn",
		// pprof handlers only: nothing runs until a profile is asked for
		// (the streams-1024 scenario asks, for token counting's share).
		"--enable-profiling",
		// No endpoints to update on loopback: without these, each stop
		// would wait out the 5 s drain delay (and be killed after 3 s).
		"--drain-delay", "0s",
		"--shutdown-timeout", "1s",
	}
	args = append(args, extra...)
	ready, calls := httpHealth, addr
	if up.grpc != "" {
		calls = "127.0.0.1:" + strconv.Itoa(ports[2])
		args, ready = append(args, "--engine-grpc-url", "http://"+up.grpc, "--grpc-listen", calls), grpcHealth
	}
	in, err := e.launch(ctx, name, calls, ready, bin, args...)
	if err != nil {
		return nil, err
	}
	in.proxy = addr
	in.queued = slotgateQueue(admin)
	in.admin = admin
	return in, nil
}

// upHAProxy starts HAProxy as "HAProxy-529" (acl: server maxconn N
// maxqueue Q plus a queue() ACL answering 529 at once) or, without the
// ACL, as "haproxy-maxqueue", which the overload scenario runs to show
// that maxqueue alone does not bound a single server's queue: only
// `timeout queue` (500 ms here) ends a wait, with a 503.
func (e *env) upHAProxy(acl bool) upFunc {
	return func(ctx context.Context, up upstream, n, q int) (*instance, error) {
		p, err := e.params(up.http, n, q)
		if err != nil {
			return nil, err
		}
		name := "haproxy"
		if !acl {
			name = "haproxy-maxqueue"
			p.NoQueueACL, p.QueueTimeout = true, "500ms"
		}
		cfg, err := e.render("haproxy.cfg.tmpl", p)
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(p.Port)
		// -db: foreground and no master process, so pid is the one
		// process that holds the queue (its RSS is measured as a tree
		// all the same).
		in, err := e.launch(ctx, name, addr, httpHealth, e.haproxy, "-db", "-f", cfg)
		if err != nil {
			return nil, err
		}
		in.queued = haproxyQueue(filepath.Join(p.Run, "haproxy.sock"))
		return in, nil
	}
}

func (e *env) upNginx(ctx context.Context, up upstream, n, q int) (*instance, error) {
	p, err := e.params(up.http, n, q)
	if err != nil {
		return nil, err
	}
	cfg, err := e.render("nginx.conf.tmpl", p)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(p.Port)
	return e.launch(ctx, "nginx", addr, httpHealth, e.nginx, "-p", p.Run, "-e", filepath.Join(p.Run, "nginx-error.log"), "-c", cfg)
}

// upHAProxyGRPC starts HAProxy forwarding h2c to up's gRPC API
// (haproxy-grpc.cfg.tmpl).
func (e *env) upHAProxyGRPC(ctx context.Context, up upstream, n, q int) (*instance, error) {
	p, err := e.params(up.grpc, n, q)
	if err != nil {
		return nil, err
	}
	cfg, err := e.render("haproxy-grpc.cfg.tmpl", p)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(p.Port)
	return e.launch(ctx, "haproxy-grpc", addr, grpcHealth, e.haproxy, "-db", "-f", cfg)
}

// upNginxGRPC starts nginx with grpc_pass to up's gRPC API
// (nginx-grpc.conf.tmpl).
func (e *env) upNginxGRPC(ctx context.Context, up upstream, n, q int) (*instance, error) {
	p, err := e.params(up.grpc, n, q)
	if err != nil {
		return nil, err
	}
	p.HTTP2On = e.nginxHTTP2On
	cfg, err := e.render("nginx-grpc.conf.tmpl", p)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(p.Port)
	return e.launch(ctx, "nginx-grpc", addr, grpcHealth, e.nginx, "-p", p.Run, "-e", filepath.Join(p.Run, "nginx-error.log"), "-c", cfg)
}

func (e *env) params(upstream string, n, q int) (configs.Params, error) {
	port, err := freePort()
	if err != nil {
		return configs.Params{}, err
	}
	run, err := os.MkdirTemp(e.run, "peer-")
	if err != nil {
		return configs.Params{}, err
	}
	return configs.Params{Run: run, Port: port, Upstream: upstream, N: n, Q: q, Workers: 2, Keepalive: min(max(n, 16), 256),
		MaxConn: max(8000, n+256)}, nil
}

func (e *env) render(name string, p configs.Params) (string, error) {
	b, err := configs.Render(name, p)
	if err != nil {
		return "", err
	}
	path := filepath.Join(p.Run, name[:len(name)-len(".tmpl")])
	return path, os.WriteFile(path, b, 0o644)
}

// launch starts a proxy and waits until ready answers through it, for at
// most 10 s.
func (e *env) launch(ctx context.Context, name, addr string, ready probe, path string, args ...string) (*instance, error) {
	logPath := filepath.Join(e.run, name+".log")
	cmd, done, err := e.procs.start(logPath, nil, path, args...)
	if err != nil {
		return nil, err
	}
	stop := func() { e.procs.stop(cmd) }
	if err := waitReady(ctx, addr, done, ready); err != nil {
		stop()
		return nil, fmt.Errorf("%s: %w; its log %s ends:\n%s", name, err, logPath, tail(logPath, 2000))
	}
	return &instance{addr: addr, pid: cmd.Process.Pid, stop: stop}, nil
}

// probe checks once, within about 500 ms, that a target at addr answers.
type probe func(ctx context.Context, addr string) error

// httpHealth is the HTTP targets' probe: GET /health answers 200.
func httpHealth(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
	if err != nil {
		return err
	}
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /health: status %d", resp.StatusCode)
	}
	return nil
}

// waitReady calls ready every 50 ms until it succeeds, for at most 10 s.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}, ready probe) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := ready(ctx, addr)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after 10 s (last: %w)", err)
		}
	}
}

// findBinary returns the path of name, also looked for in /usr/sbin (not
// on every user's PATH), or "" when it is missing.
func findBinary(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); isExec(p) {
		return p
	}
	return ""
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
