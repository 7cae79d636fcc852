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
	// up starts the target in front of the engine at upstream.
	up func(ctx context.Context, upstream string, n, q int) (*instance, error)
}

// instance is one started target.
type instance struct {
	addr string // host:port the client talks to
	pid  int    // the proxy's process, 0 for direct
	// queued reads how many requests the proxy holds in its queue now; nil
	// when it has none (direct, nginx).
	queued func(ctx context.Context) (int, error)
	stop   func()
}

// env is what starting a target needs.
type env struct {
	procs       *procs
	run         string // scratch folder for configs and logs
	slotgateBin string // path of the slotgate binary
	haproxy     string
	nginx       string
}

// defaultTargets are the targets a scenario runs on unless it names its
// own.
var defaultTargets = []string{"direct", "slotgate", "haproxy", "nginx"}

// targets returns the targets named, in that order, leaving out the peers
// that are not installed.
func (e *env) targets(names []string) []target {
	all := map[string]func(context.Context, string, int, int) (*instance, error){
		"direct": func(_ context.Context, upstream string, _, _ int) (*instance, error) {
			return &instance{addr: upstream, stop: func() {}}, nil
		},
	}
	if e.slotgateBin != "" {
		all["slotgate"] = e.upSlotgate
	}
	if e.haproxy != "" {
		all["haproxy"] = e.upHAProxy(true)
		all["haproxy-maxqueue"] = e.upHAProxy(false)
	}
	if e.nginx != "" {
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

func (e *env) upSlotgate(ctx context.Context, upstream string, n, q int) (*instance, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	adminPort, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	admin := "127.0.0.1:" + strconv.Itoa(adminPort)
	in, err := e.launch(ctx, "slotgate", addr, e.slotgateBin,
		"--listen", addr,
		"--admin-listen", admin,
		"--admin-grpc-listen", "off",
		"--engine-url", "http://"+upstream,
		"--engine-request-limit", strconv.Itoa(n),
		"--request-queue-limit", strconv.Itoa(q),
		"--engine-metrics-dialect", "none",
		"--log-level", "warn",
		// No endpoints to update on loopback: without these, each stop
		// would wait out the 5 s drain delay (and be killed after 3 s).
		"--drain-delay", "0s",
		"--shutdown-timeout", "1s",
	)
	if err != nil {
		return nil, err
	}
	in.queued = slotgateQueue(admin)
	return in, nil
}

// upHAProxy starts HAProxy as "HAProxy-529" (acl: server maxconn N
// maxqueue Q plus a queue() ACL answering 529 at once) or, without the
// ACL, as "haproxy-maxqueue", which the overload scenario runs to show
// that maxqueue alone does not bound a single server's queue: only
// `timeout queue` (500 ms here) ends a wait, with a 503.
func (e *env) upHAProxy(acl bool) func(context.Context, string, int, int) (*instance, error) {
	return func(ctx context.Context, upstream string, n, q int) (*instance, error) {
		p, err := e.params(upstream, n, q)
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
		in, err := e.launch(ctx, name, addr, e.haproxy, "-db", "-f", cfg)
		if err != nil {
			return nil, err
		}
		in.queued = haproxyQueue(filepath.Join(p.Run, "haproxy.sock"))
		return in, nil
	}
}

func (e *env) upNginx(ctx context.Context, upstream string, n, q int) (*instance, error) {
	p, err := e.params(upstream, n, q)
	if err != nil {
		return nil, err
	}
	cfg, err := e.render("nginx.conf.tmpl", p)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(p.Port)
	return e.launch(ctx, "nginx", addr, e.nginx, "-p", p.Run, "-e", filepath.Join(p.Run, "nginx-error.log"), "-c", cfg)
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
	return configs.Params{Run: run, Port: port, Upstream: upstream, N: n, Q: q, Workers: 2, Keepalive: min(max(n, 16), 256)}, nil
}

func (e *env) render(name string, p configs.Params) (string, error) {
	b, err := configs.Render(name, p)
	if err != nil {
		return "", err
	}
	path := filepath.Join(p.Run, name[:len(name)-len(".tmpl")])
	return path, os.WriteFile(path, b, 0o644)
}

// launch starts a proxy and waits until a GET /health through it answers
// 200, for at most 10 s.
func (e *env) launch(ctx context.Context, name, addr, path string, args ...string) (*instance, error) {
	logPath := filepath.Join(e.run, name+".log")
	cmd, done, err := e.procs.start(logPath, nil, path, args...)
	if err != nil {
		return nil, err
	}
	stop := func() { e.procs.stop(cmd) }
	if err := waitReady(ctx, addr, done); err != nil {
		stop()
		return nil, fmt.Errorf("%s: %w; its log %s ends:\n%s", name, err, logPath, tail(logPath, 2000))
	}
	return &instance{addr: addr, pid: cmd.Process.Pid, stop: stop}, nil
}

func waitReady(ctx context.Context, addr string, exited <-chan struct{}) error {
	c := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get("http://" + addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after 10 s (last: %v)", err)
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
