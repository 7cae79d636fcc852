// Package configs holds the HAProxy and nginx configurations that
// slotgate-bench runs as slotgate's peers, as Go text/templates.
package configs

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Params are the values a template is filled in with.
type Params struct {
	Run       string // folder for the run's pid, logs and temp files
	Port      int    // the proxy's port on 127.0.0.1
	Upstream  string // the engine's host:port
	N, Q      int    // engine slots and queue length
	Workers   int    // nginx worker processes
	Keepalive int    // nginx idle upstream connections kept per worker
	// NoQueueACL leaves HAProxy's queue() ACL out: "server maxconn N
	// maxqueue Q" alone, which does not bound a single server's queue.
	NoQueueACL bool
	// QueueTimeout is HAProxy's `timeout queue` (HAProxy's time syntax,
	// e.g. "1s"); empty: 30s, longer than any run.
	QueueTimeout string
	// MaxConn is HAProxy's global and frontend maxconn, the connections
	// it accepts at once (HAProxy sizes its open files from it); 0: 8000.
	MaxConn int
	// HTTP2On turns nginx's HTTP/2 listener on with `http2 on` (nginx
	// 1.25.1 and later) rather than the listen's http2 parameter, which
	// older versions need.
	HTTP2On bool
}

func (p Params) validate() error {
	var errs []error
	if p.Run == "" {
		errs = append(errs, errors.New("run folder unset"))
	}
	if p.Port <= 0 || p.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d out of range", p.Port))
	}
	if p.Upstream == "" {
		errs = append(errs, errors.New("upstream unset"))
	}
	if p.N < 1 || p.Q < 0 {
		errs = append(errs, fmt.Errorf("slots %d and queue %d: need at least 1 slot and no negative queue", p.N, p.Q))
	}
	return errors.Join(errs...)
}

// Render fills in the template name ("haproxy.cfg.tmpl", "nginx.conf.tmpl",
// or for gRPC "haproxy-grpc.cfg.tmpl", "nginx-grpc.conf.tmpl") with p.
func Render(name string, p Params) ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	t, err := template.New(name).Option("missingkey=error").ParseFS(files, name)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	return b.Bytes(), nil
}
