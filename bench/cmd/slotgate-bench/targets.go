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
	// up starts the target in front of the engine at upstream and returns
	// its host:port and a function that stops it.
	up func(ctx context.Context, upstream string, n, q int) (addr string, stop func(), err error)
}

// env is what starting a target needs.
type env struct {
	procs       *procs
	run         string // scratch folder for configs and logs
	slotgateBin string // path of the slotgate binary
	haproxy     string
	nginx       string
}

func (e *env) targets() []target {
	ts := []target{{name: "direct", up: func(_ context.Context, upstream string, _, _ int) (string, func(), error) {
		return upstream, func() {}, nil
	}}}
	if e.slotgateBin != "" {
		ts = append(ts, target{"slotgate", e.upSlotgate})
	}
	if e.haproxy != "" {
		ts = append(ts, target{"haproxy", e.upHAProxy})
	}
	if e.nginx != "" {
		ts = append(ts, target{"nginx", e.upNginx})
	}
	return ts
}

func (e *env) upSlotgate(ctx context.Context, upstream string, n, q int) (string, func(), error) {
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	admin, err := freePort()
	if err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	return e.launch(ctx, "slotgate", addr, e.slotgateBin,
		"--listen", addr,
		"--admin-listen", "127.0.0.1:"+strconv.Itoa(admin),
		"--admin-grpc-listen", "off",
		"--engine-url", "http://"+upstream,
		"--engine-request-limit", strconv.Itoa(n),
		"--request-queue-limit", strconv.Itoa(q),
		"--engine-metrics-dialect", "none",
		"--log-level", "warn",
	)
}

func (e *env) upHAProxy(ctx context.Context, upstream string, n, q int) (string, func(), error) {
	p, err := e.params(upstream, n, q)
	if err != nil {
		return "", nil, err
	}
	cfg, err := e.render("haproxy.cfg.tmpl", p)
	if err != nil {
		return "", nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(p.Port)
	return e.launch(ctx, "haproxy", addr, e.haproxy, "-db", "-f", cfg)
}

func (e *env) upNginx(ctx context.Context, upstream string, n, q int) (string, func(), error) {
	p, err := e.params(upstream, n, q)
	if err != nil {
		return "", nil, err
	}
	cfg, err := e.render("nginx.conf.tmpl", p)
	if err != nil {
		return "", nil, err
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
func (e *env) launch(ctx context.Context, name, addr, path string, args ...string) (string, func(), error) {
	logPath := filepath.Join(e.run, name+".log")
	cmd, done, err := e.procs.start(logPath, path, args...)
	if err != nil {
		return "", nil, err
	}
	stop := func() { e.procs.stop(cmd) }
	if err := waitReady(ctx, addr, done); err != nil {
		stop()
		return "", nil, fmt.Errorf("%s: %w; its log %s ends:\n%s", name, err, logPath, tail(logPath, 2000))
	}
	return addr, stop, nil
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
