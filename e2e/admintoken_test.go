package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The two tokens have the same length: only their content tells them
// apart.
const (
	adminTokenA = "admin-token-AAAA-0123456789abcdef"
	adminTokenB = "admin-token-BBBB-fedcba9876543210"
)

// tokenVolume is a token file laid out as a Kubernetes Secret volume:
// dir/token → ..data/token, where ..data is a symlink to a directory that
// an update replaces by swapping the symlink.
type tokenVolume struct {
	t   *testing.T
	dir string
	gen int
}

func newTokenVolume(t *testing.T, token string) *tokenVolume {
	t.Helper()
	v := &tokenVolume{t: t, dir: t.TempDir()}
	v.rotate(token)
	if err := os.Symlink(filepath.Join("..data", "token"), v.path()); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *tokenVolume) path() string { return filepath.Join(v.dir, "token") }

// rotate puts token in a new directory and swaps ..data to it atomically,
// as the kubelet does.
func (v *tokenVolume) rotate(token string) {
	v.t.Helper()
	v.gen++
	gen := filepath.Join(v.dir, "..gen"+strings.Repeat("x", v.gen))
	if err := os.Mkdir(gen, 0o755); err != nil {
		v.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gen, "token"), []byte(token+"\n"), 0o600); err != nil {
		v.t.Fatal(err)
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
}

// adminCall sends method url with body and, unless token is "", the
// bearer token; it returns the status, the WWW-Authenticate header and the
// body.
func adminCall(t *testing.T, method, url, token, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(b)
}

// wantRefused checks a 401 with the Bearer challenge and a JSON error.
func wantRefused(t *testing.T, what string, status int, challenge, body string) {
	t.Helper()
	if status != http.StatusUnauthorized || challenge != `Bearer realm="slotgate-admin"` {
		t.Errorf("%s: %d, WWW-Authenticate %q; want 401 and the Bearer challenge", what, status, challenge)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" {
		t.Errorf("%s: body %q is not {\"error\": message}", what, body)
	}
}

// TestAdminToken: with --admin-token-file, POST /drain, /limits and
// /busy_threshold without the token, or with a wrong one, get 401 and
// change nothing, while GET endpoints stay open; with the token they
// work; a Secret-style rotation switches tokens; no token is logged.
func TestAdminToken(t *testing.T) {
	t.Parallel()
	eng := newEngine(t)
	vol := newTokenVolume(t, adminTokenA)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "2", "--admin-token-file", vol.path())
	sg.log.WaitFor(t, `"msg":"admin auth on`, waitLimit)
	const limitsBefore = `{"engine_request_limit":2,"engine_request_waiting_limit":null,"request_queue_limit":`

	for _, token := range []string{"", "wrong", adminTokenB, adminTokenA + "x"} {
		s, c, b := adminCall(t, "POST", sg.admin+"/limits", token, `{"engine_request_limit":7}`)
		wantRefused(t, "POST /limits with token "+token, s, c, b)
		s, c, b = adminCall(t, "POST", sg.admin+"/drain", token, "")
		wantRefused(t, "POST /drain with token "+token, s, c, b)
		s, c, b = adminCall(t, "POST", sg.admin+"/busy_threshold", token, `{"active_decode_blocks_threshold":0.5}`)
		wantRefused(t, "POST /busy_threshold with token "+token, s, c, b)
	}
	// Nothing changed: still ready, still serving, the limits and the
	// thresholds as they were.
	for _, path := range []string{"/readyz", "/livez", "/metrics", "/limits", "/busy_threshold"} {
		if s, _ := get(t, sg.admin+path); s != http.StatusOK {
			t.Errorf("GET %s without a token: %d, want 200", path, s)
		}
	}
	if _, body := get(t, sg.admin+"/limits"); !strings.HasPrefix(body, limitsBefore) {
		t.Errorf("GET /limits after refused POSTs = %s, want %s…", body, limitsBefore)
	}
	if _, body := get(t, sg.admin+"/busy_threshold"); strings.Contains(body, "0.5") {
		t.Errorf("GET /busy_threshold after a refused POST = %s", body)
	}
	if r := post(t.Context(), http.DefaultClient, sg.proxy, "after-refusals", "{}"); r.status != http.StatusOK {
		t.Fatalf("a proxied request after refused admin calls: %d %v", r.status, r.err)
	}

	if s, _, b := adminCall(t, "POST", sg.admin+"/limits", adminTokenA, `{"engine_request_limit":3}`); s != http.StatusOK ||
		!strings.Contains(b, `"engine_request_limit":3`) {
		t.Fatalf("POST /limits with the token: %d %s, want 200 and N=3", s, b)
	}

	vol.rotate(adminTokenB)
	eventually(t, "the rotated token to be taken", func() bool {
		s, _, _ := adminCall(t, "POST", sg.admin+"/limits", adminTokenB, `{"engine_request_limit":4}`)
		return s == http.StatusOK
	})
	s, c, b := adminCall(t, "POST", sg.admin+"/limits", adminTokenA, `{"engine_request_limit":9}`)
	wantRefused(t, "POST /limits with the old token after rotation", s, c, b)
	if _, body := get(t, sg.admin+"/limits"); !strings.Contains(body, `"engine_request_limit":4`) {
		t.Errorf("GET /limits after rotation = %s, want N=4", body)
	}

	if s, _, b := adminCall(t, "POST", sg.admin+"/drain", adminTokenB, ""); s != http.StatusAccepted {
		t.Fatalf("POST /drain with the token: %d %s, want 202", s, b)
	}
	eventually(t, "not ready once draining", func() bool {
		s, _ := get(t, sg.admin+"/readyz")
		return s == http.StatusServiceUnavailable
	})
	out := sg.log.String()
	for _, tok := range []string{adminTokenA, adminTokenB} {
		if strings.Contains(out, tok) {
			t.Errorf("slotgate logged the admin token %q", tok)
		}
	}
	if !strings.Contains(out, "new token is in force") {
		t.Errorf("no log line for the rotation")
	}
}

// TestAdminTokenOffByDefault: without --admin-token-file, the mutating
// admin calls need no token, and start-up says that auth is off.
func TestAdminTokenOffByDefault(t *testing.T) {
	t.Parallel()
	eng := newEngine(t)
	sg := start(t, eng.url(), nil, "--engine-request-limit", "2")
	sg.log.WaitFor(t, `"msg":"admin auth off`, waitLimit)
	if s, _, b := adminCall(t, "POST", sg.admin+"/limits", "", `{"engine_request_limit":3}`); s != http.StatusOK {
		t.Errorf("POST /limits without a token, auth off: %d %s, want 200", s, b)
	}
}

// TestAdminTokenRefusedAtStart: a token file that is missing, or empty,
// stops start-up with exit status 2 and a line naming the setting and the
// path.
func TestAdminTokenRefusedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		lines []string
	}{
		{name: "missing", args: []string{"--admin-token-file", missing},
			lines: []string{"slotgate: --admin-token-file: ", missing, "no such file"}},
		{name: "empty", args: []string{"--admin-token-file", empty},
			lines: []string{"slotgate: --admin-token-file: ", empty, "empty"}},
		{name: "missing, from env", env: map[string]string{"SLOTGATE_ADMIN_TOKEN_FILE": missing},
			lines: []string{"slotgate: SLOTGATE_ADMIN_TOKEN_FILE: ", missing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sg := launch(t, "http://127.0.0.1:1", tt.env, tt.args...)
			if code := sg.wait(); code != 2 {
				t.Fatalf("exit status %d, want 2; output:\n%s", code, sg.log.String())
			}
			lines := sg.log.Lines("slotgate: ")
			if len(lines) != 1 {
				t.Fatalf("%d problem lines, want 1:\n%s", len(lines), sg.log.String())
			}
			for _, want := range tt.lines {
				if !strings.Contains(lines[0], want) {
					t.Errorf("problem line %q lacks %q", lines[0], want)
				}
			}
			if strings.Contains(sg.log.String(), `"msg":"listening"`) {
				t.Errorf("slotgate listened before refusing the token file")
			}
		})
	}
}
