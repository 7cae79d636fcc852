package command_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/command"
)

// TestDrainCommand: `slotgate drain`, as a preStop exec hook runs it in
// slotgate's container with slotgate's environment, starts the drain of
// the slotgate whose admin address and token file that environment names;
// a wrong token or no slotgate fails with exit 1, a bad setting with 2.
func TestDrainCommand(t *testing.T) {
	dir := t.TempDir()
	tokenFile, wrongFile := filepath.Join(dir, "token"), filepath.Join(dir, "wrong")
	for f, v := range map[string]string{tokenFile: "s3cret\n", wrongFile: "nope"} {
		if err := os.WriteFile(f, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	eng := newEngine(t)
	s := start(t, eng.url(), nil, "--admin-token-file", tokenFile)
	// Ready first, so that a 503 below can only be a drain: on a busy
	// machine the engine's first health check may come after the table.
	s.log.WaitFor(t, `"msg":"engine is ready"`, waitLimit)
	adminAddr := strings.TrimPrefix(s.admin, "http://")
	drain := func(env map[string]string, args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := command.Run(command.Options{}, append([]string{"drain"}, args...), env, &out, &errOut, nil)
		return code, out.String() + errOut.String()
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		says string
	}{
		{"wrong token", map[string]string{"SLOTGATE_ADMIN_LISTEN": adminAddr, "SLOTGATE_ADMIN_TOKEN_FILE": wrongFile}, nil, 1, "401"},
		{"no slotgate there", map[string]string{"SLOTGATE_ADMIN_LISTEN": "127.0.0.1:1"}, nil, 1, "connect"},
		{"bad address", nil, []string{"--admin-listen", "nonsense"}, 2, "--admin-listen"},
		{"missing token file", map[string]string{"SLOTGATE_ADMIN_LISTEN": adminAddr, "SLOTGATE_ADMIN_TOKEN_FILE": filepath.Join(dir, "none")}, nil, 2, "SLOTGATE_ADMIN_TOKEN_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, out := drain(tc.env, tc.args...); code != tc.code || !strings.Contains(out, tc.says) {
				t.Errorf("slotgate drain = %d, %q; want %d, saying %q", code, out, tc.code, tc.says)
			}
		})
	}
	if code, _ := get(t, s.admin+"/readyz"); code != 200 {
		t.Fatalf("/readyz %d before the drain, want 200: a failed drain call drained", code)
	}
	if _, m := get(t, s.admin+"/metrics"); !strings.Contains(m, "\nslotgate_ready 1\n") || !strings.Contains(m, "\nslotgate_draining 0\n") {
		t.Errorf("before the drain the metrics lack slotgate_ready 1 and slotgate_draining 0")
	}
	code, out := drain(map[string]string{"SLOTGATE_ADMIN_TOKEN_FILE": tokenFile}, "--admin-listen", adminAddr)
	if code != 0 || !strings.Contains(out, "draining") {
		t.Fatalf("slotgate drain = %d, %q; want 0, draining", code, out)
	}
	if code, _ := get(t, s.admin+"/readyz"); code != 503 {
		t.Errorf("/readyz %d after slotgate drain, want 503", code)
	}
	if _, m := get(t, s.admin+"/metrics"); !strings.Contains(m, "\nslotgate_ready 0\n") || !strings.Contains(m, "\nslotgate_draining 1\n") {
		t.Errorf("after the drain the metrics lack slotgate_ready 0 and slotgate_draining 1")
	}
}
