package configs

import (
	"strings"
	"testing"
)

func TestRender(t *testing.T) {
	p := Params{Run: "/tmp/r", Port: 18080, Upstream: "127.0.0.1:9000", N: 8, Q: 16, Workers: 2, Keepalive: 16}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"haproxy.cfg.tmpl", []string{
			"bind 127.0.0.1:18080",
			"option abortonclose",
			"option http-no-delay",
			"if { queue(be) ge 16 }",
			`string '{"error":{"message":"Server overloaded: worker at capacity","type":"Overloaded","code":529}}' hdr Retry-After 1`,
			"server s1 127.0.0.1:9000 maxconn 8 maxqueue 16",
			"timeout queue 30s",
			"stats socket /tmp/r/haproxy.sock mode 600 level admin",
		}},
		{"nginx.conf.tmpl", []string{
			"pid /tmp/r/nginx.pid;",
			"server 127.0.0.1:9000 max_conns=8;",
			"listen 127.0.0.1:18080 backlog=4096;",
			`return 529 '{"error":{"message":"Server overloaded: worker at capacity","type":"Overloaded","code":529}}'`,
			"add_header Retry-After 1 always;",
			"worker_processes 2;",
		}},
	} {
		out, err := Render(tc.name, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: missing %q in:\n%s", tc.name, w, out)
			}
		}
		if strings.Contains(string(out), "{{") || strings.Contains(string(out), "<no value>") {
			t.Errorf("%s: unfilled template:\n%s", tc.name, out)
		}
	}
}

func TestRenderHAProxyMaxqueue(t *testing.T) {
	p := Params{Run: "/tmp/r", Port: 18080, Upstream: "127.0.0.1:9000", N: 8, Q: 16, NoQueueACL: true, QueueTimeout: "1s"}
	out, err := Render("haproxy.cfg.tmpl", p)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"queue(be)", false},
		{"timeout queue 1s", true},
		{"server s1 127.0.0.1:9000 maxconn 8 maxqueue 16", true},
		{"stats socket /tmp/r/haproxy.sock", true},
	} {
		if got := strings.Contains(string(out), tc.text); got != tc.want {
			t.Errorf("contains %q = %v, want %v, in:\n%s", tc.text, got, tc.want, out)
		}
	}
}

func TestRenderRejectsBadParams(t *testing.T) {
	if _, err := Render("haproxy.cfg.tmpl", Params{}); err == nil {
		t.Fatal("Render with empty params: want an error")
	}
	if _, err := Render("nope.tmpl", Params{Run: "/r", Port: 1, Upstream: "a:1", N: 1}); err == nil {
		t.Fatal("Render of an unknown template: want an error")
	}
}

func TestRenderGRPC(t *testing.T) {
	p := Params{Run: "/tmp/r", Port: 18080, Upstream: "127.0.0.1:9001", N: 256, Q: 16, Workers: 2, Keepalive: 64}
	for _, tc := range []struct {
		name    string
		http2On bool
		want    []string
		not     []string
	}{
		{"haproxy-grpc.cfg.tmpl", false, []string{
			"mode http",
			"bind 127.0.0.1:18080 proto h2",
			"server s1 127.0.0.1:9001 proto h2 maxconn 256 maxqueue 16",
			"option http-no-delay",
		}, []string{"queue(be)", "return status 529"}},
		{"nginx-grpc.conf.tmpl", false, []string{
			"listen 127.0.0.1:18080 http2 backlog=4096;",
			"grpc_pass grpc://up;",
			"server 127.0.0.1:9001 max_conns=256;",
			"keepalive 64;",
		}, []string{"http2 on;"}},
		{"nginx-grpc.conf.tmpl", true, []string{
			"listen 127.0.0.1:18080 backlog=4096;",
			"http2 on;",
			"grpc_pass grpc://up;",
		}, []string{" http2 backlog"}},
	} {
		p.HTTP2On = tc.http2On
		out, err := Render(tc.name, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s (http2 on %v): missing %q in:\n%s", tc.name, tc.http2On, w, out)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(string(out), w) {
				t.Errorf("%s (http2 on %v): unexpected %q in:\n%s", tc.name, tc.http2On, w, out)
			}
		}
		if strings.Contains(string(out), "{{") || strings.Contains(string(out), "<no value>") {
			t.Errorf("%s: unfilled template:\n%s", tc.name, out)
		}
	}
}

// TestRenderHAProxyMaxConn: the streams-at-scale scenarios hold thousands
// of connections; HAProxy's maxconn follows MaxConn, 8000 when unset.
func TestRenderHAProxyMaxConn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		maxConn int
		want    string
	}{
		{"unset", 0, "maxconn 8000"},
		{"set", 4352, "maxconn 4352"},
	} {
		p := Params{Run: "/tmp/r", Port: 18080, Upstream: "127.0.0.1:9000", N: 4096, Q: 16, MaxConn: tc.maxConn}
		out, err := Render("haproxy.cfg.tmpl", p)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(out), tc.want); n != 2 {
			t.Errorf("%s: %q %d times, want 2 (global and frontend):\n%s", tc.name, tc.want, n, out)
		}
	}
}
