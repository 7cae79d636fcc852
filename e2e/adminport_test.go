package e2e_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAdminPortNotOnProxyPort: no admin path answers on the proxy port.
// Each is asked there with every method the admin port takes: the answer
// is the engine's (the engine saw the request) or slotgate's own
// refusal, never the admin handler's, and the drain is not triggered.
func TestAdminPortNotOnProxyPort(t *testing.T) {
	eng := newRawEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "2", "--enable-profiling",
		"--engine-metrics-dialect", "none", "--drain-delay", "0s")
	limitsBefore := adminBody(t, sg.admin+"/limits")
	for _, tc := range []struct {
		method, path, body string
	}{
		{"GET", "/metrics", ""},
		{"GET", "/livez", ""},
		{"GET", "/readyz", ""},
		{"POST", "/drain", ""},
		{"GET", "/limits", ""},
		{"HEAD", "/limits", ""},
		{"POST", "/limits", `{"engine_request_limit":1}`},
		{"GET", "/busy_threshold", ""},
		{"HEAD", "/busy_threshold", ""},
		{"POST", "/busy_threshold", `{"model":"default","active_decode_blocks_threshold":0.1}`},
		{"GET", "/v1/load", ""},
		{"GET", "/v1/load/stream", ""},
		{"GET", "/debug/pprof/", ""},
		{"GET", "/debug/pprof/cmdline", ""},
		{"GET", "/debug/pprof/profile?seconds=1", ""},
		{"GET", "/debug/pprof/symbol", ""},
		{"GET", "/debug/pprof/trace?seconds=1", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			eng.take()
			req, err := http.NewRequest(tc.method, sg.proxy+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s on the proxy port: %v", tc.method, tc.path, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := engineBody
			if tc.method == http.MethodHead {
				want = ""
			}
			if resp.StatusCode != http.StatusOK || string(body) != want {
				t.Errorf("answer %d %q, want the engine's 200 %q", resp.StatusCode, body, want)
			}
			seen := eng.take()
			if len(seen) != 1 || seen[0].String() != tc.method+" "+tc.path {
				t.Errorf("the engine saw %v, want exactly %s %s", seen, tc.method, tc.path)
			}
			if tc.method == http.MethodGet && !strings.HasPrefix(tc.path, "/debug/pprof/profile") &&
				!strings.HasPrefix(tc.path, "/debug/pprof/trace") && tc.path != "/v1/load/stream" {
				if admin := adminBody(t, sg.admin+tc.path); admin == string(body) {
					t.Errorf("the proxy port answered what the admin port does: %q", admin)
				}
			}
		})
	}
	if got := adminBody(t, sg.admin+"/limits"); got != limitsBefore {
		t.Errorf("limits changed: %q, were %q", got, limitsBefore)
	}
	if status, body := get(t, sg.admin+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz = %d %q after the calls: the drain was triggered", status, body)
	}
	if strings.Contains(sg.log.String(), "draining:") {
		t.Errorf("slotgate logged a drain:\n%s", sg.log.String())
	}
	if status, body := get(t, sg.proxy+"/v1/models"); status != http.StatusOK {
		t.Errorf("proxy answered %d %q after the calls", status, body)
	}
}

// adminBody GETs url on the admin port and returns its body.
func adminBody(t *testing.T, url string) string {
	t.Helper()
	c := &http.Client{Timeout: waitLimit}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
