package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/slotgate/slotgate/admin"
)

const (
	goodToken  = "s3cr3t-admin-token-0123456789"
	otherToken = "0th3rs-admin-token-9876543210" // the same length as goodToken
)

// authFixture is an admin handler whose routes count their calls: the
// fixed POST /drain and GET routes, and an extra route serving every
// method, as /limits and /busy_threshold do.
type authFixture struct {
	h             http.Handler
	drains, extra atomic.Int64
}

func newAuthFixture(t *testing.T, tok *admin.Token) *authFixture {
	t.Helper()
	f := &authFixture{}
	h, err := admin.NewHandler(admin.Options{
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "m 1\n") }),
		Ready:   func() error { return nil },
		Drain:   func() { f.drains.Add(1) },
		Routes: map[string]http.Handler{"/extra": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			f.extra.Add(1)
			w.WriteHeader(http.StatusOK)
		})},
		Token: tok,
	})
	if err != nil {
		t.Fatalf("NewHandler: %v", err)
	}
	f.h = h
	return f
}

// do serves one request with authorization as its Authorization header
// ("" sends none).
func (f *authFixture) do(method, path, authorization string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(`{}`))
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newToken(t *testing.T, path string, log *zap.Logger) *admin.Token {
	t.Helper()
	tok, err := admin.NewToken(path, log)
	if err != nil {
		t.Fatalf("NewToken(%s): %v", path, err)
	}
	return tok
}

// wantUnauthorized checks a 401's challenge and body, and that neither
// counted route ran.
func wantUnauthorized(t *testing.T, f *authFixture, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401; body %q", rec.Code, rec.Body.String())
	}
	if got := rec.Header().Get("WWW-Authenticate"); got != `Bearer realm="slotgate-admin"` {
		t.Errorf("WWW-Authenticate %q", got)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == "" {
		t.Errorf("body %q is not {\"error\": message}: %v", rec.Body.String(), err)
	}
	if strings.Contains(rec.Body.String(), goodToken) {
		t.Errorf("the 401 body shows the token: %q", rec.Body.String())
	}
	if n := f.drains.Load() + f.extra.Load(); n != 0 {
		t.Errorf("a refused request reached a handler %d times", n)
	}
}

func TestTokenGuardsMutatingRoutes(t *testing.T) {
	path := writeFile(t, t.TempDir(), "token", "\n  "+goodToken+" \n") // white space trimmed
	tests := []struct {
		name          string
		noToken       bool // no --admin-token-file
		method, path  string
		authorization string
		want          int // 0: 401
	}{
		{name: "no token configured: drain open", noToken: true, method: "POST", path: "/drain", want: http.StatusAccepted},
		{name: "no token configured: extra route open", noToken: true, method: "POST", path: "/extra", want: http.StatusOK},
		{name: "right token: drain", method: "POST", path: "/drain", authorization: "Bearer " + goodToken, want: http.StatusAccepted},
		{name: "right token: extra route", method: "POST", path: "/extra", authorization: "Bearer " + goodToken, want: http.StatusOK},
		{name: "right token: scheme in lower case", method: "POST", path: "/drain", authorization: "bearer " + goodToken, want: http.StatusAccepted},
		{name: "right token: extra spaces", method: "POST", path: "/drain", authorization: "Bearer   " + goodToken + " ", want: http.StatusAccepted},
		{name: "right token: PUT on the extra route", method: "PUT", path: "/extra", authorization: "Bearer " + goodToken, want: http.StatusOK},
		{name: "no header", method: "POST", path: "/drain"},
		{name: "wrong token of the same length", method: "POST", path: "/drain", authorization: "Bearer " + otherToken},
		{name: "token of a different length", method: "POST", path: "/drain", authorization: "Bearer " + goodToken + "x"},
		{name: "a prefix of the token", method: "POST", path: "/drain", authorization: "Bearer " + goodToken[:5]},
		{name: "wrong scheme", method: "POST", path: "/drain", authorization: "Basic " + goodToken},
		{name: "token without scheme", method: "POST", path: "/drain", authorization: goodToken},
		{name: "scheme without token", method: "POST", path: "/drain", authorization: "Bearer "},
		{name: "scheme only", method: "POST", path: "/drain", authorization: "Bearer"},
		{name: "the untrimmed file content", method: "POST", path: "/drain", authorization: "Bearer \n  " + goodToken + " \n"},
		{name: "extra route without token", method: "POST", path: "/extra"},
		{name: "other method without token", method: "DELETE", path: "/extra"},
		{name: "unknown path without token", method: "POST", path: "/nowhere"},
		{name: "GET metrics open", method: "GET", path: "/metrics", want: http.StatusOK},
		{name: "GET readyz open", method: "GET", path: "/readyz", want: http.StatusOK},
		{name: "GET livez open", method: "GET", path: "/livez", want: http.StatusOK},
		{name: "GET extra route open", method: "GET", path: "/extra", want: http.StatusOK},
		{name: "HEAD extra route open", method: "HEAD", path: "/extra", want: http.StatusOK},
		{name: "GET with a wrong token still open", method: "GET", path: "/metrics", authorization: "Bearer nope", want: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tok *admin.Token
			if !tt.noToken {
				tok = newToken(t, path, nil)
			}
			f := newAuthFixture(t, tok)
			rec := f.do(tt.method, tt.path, tt.authorization)
			if tt.want == 0 {
				wantUnauthorized(t, f, rec)
				return
			}
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d; body %q", rec.Code, tt.want, rec.Body.String())
			}
		})
	}
}

func TestNewTokenRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
		want string // in the error, besides the path
	}{
		{name: "missing", path: filepath.Join(dir, "missing"), want: "no such file"},
		{name: "empty", path: writeFile(t, dir, "empty", ""), want: "empty"},
		{name: "white space only", path: writeFile(t, dir, "blank", " \n\t\n"), want: "empty"},
		{name: "a directory", path: dir, want: "directory"},
		{name: "too large", path: writeFile(t, dir, "large", strings.Repeat("x", admin.MaxTokenFileBytes+1)), want: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := admin.NewToken(tt.path, nil)
			if err == nil {
				t.Fatalf("NewToken succeeded: %v", tok)
			}
			if !strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name the path %s and %q", err, tt.path, tt.want)
			}
		})
	}
	// A token of exactly the limit is taken.
	if _, err := admin.NewToken(writeFile(t, dir, "max", strings.Repeat("x", admin.MaxTokenFileBytes)), nil); err != nil {
		t.Errorf("a token of MaxTokenFileBytes: %v", err)
	}
}

// secretVolume is a directory laid out as the kubelet lays out a Secret
// volume: dir/token → ..data/token, ..data → a timestamped directory that
// an update replaces by swapping the ..data symlink.
type secretVolume struct {
	t   *testing.T
	dir string
	gen int
}

func newSecretVolume(t *testing.T, token string) *secretVolume {
	v := &secretVolume{t: t, dir: t.TempDir()}
	v.update(token)
	if err := os.Symlink(filepath.Join("..data", "token"), v.path()); err != nil {
		t.Fatal(err)
	}
	return v
}

func (v *secretVolume) path() string { return filepath.Join(v.dir, "token") }

// update writes token into a new timestamped directory and swaps ..data
// to it atomically, as the kubelet's atomic writer does, then removes the
// old directory. It returns the new file's path.
func (v *secretVolume) update(token string) string {
	v.t.Helper()
	v.gen++
	ts := filepath.Join(v.dir, "..gen"+string(rune('0'+v.gen)))
	if err := os.Mkdir(ts, 0o755); err != nil {
		v.t.Fatal(err)
	}
	file := writeFile(v.t, ts, "token", token)
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
		v.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		v.t.Fatal(err)
	}
	if v.gen > 1 {
		old := filepath.Join(v.dir, "..gen"+string(rune('0'+v.gen-1)))
		if err := os.RemoveAll(old); err != nil {
			v.t.Fatal(err)
		}
	}
	return file
}

// status sends POST /drain with token and returns the status.
func (f *authFixture) status(token string) int {
	return f.do(http.MethodPost, "/drain", "Bearer "+token).Code
}

// TestTokenFollowsSymlinkSwap: a Secret update, which swaps a symlink,
// puts the new token in force within a second and retires the old one;
// within the second the old one still holds. The new token has the old
// one's length and the new file the old one's modification time, so only
// the file's identity tells them apart.
func TestTokenFollowsSymlinkSwap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if len(goodToken) != len(otherToken) {
			t.Fatalf("the tokens must have one length: %d and %d", len(goodToken), len(otherToken))
		}
		v := newSecretVolume(t, goodToken+"\n")
		core, logs := observer.New(zapcore.InfoLevel)
		f := newAuthFixture(t, newToken(t, v.path(), zap.New(core)))
		if got := f.status(goodToken); got != http.StatusAccepted {
			t.Fatalf("first token: status %d", got)
		}
		oldInfo, err := os.Stat(v.path())
		if err != nil {
			t.Fatal(err)
		}
		file := v.update(otherToken + "\n")
		if err := os.Chtimes(file, oldInfo.ModTime(), oldInfo.ModTime()); err != nil {
			t.Fatal(err)
		}
		if got := f.status(goodToken); got != http.StatusAccepted {
			t.Errorf("within the second: the old token got %d, want 202 (looked at once a second)", got)
		}
		time.Sleep(time.Second)
		if got := f.status(otherToken); got != http.StatusAccepted {
			t.Errorf("after the swap: the new token got %d, want 202", got)
		}
		if got := f.status(goodToken); got != http.StatusUnauthorized {
			t.Errorf("after the swap: the old token got %d, want 401", got)
		}
		if n := logs.FilterMessageSnippet("new token is in force").Len(); n != 1 {
			t.Errorf("%d change logs, want 1: %v", n, logs.All())
		}
		for _, e := range logs.All() {
			if line := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(line, goodToken) || strings.Contains(line, otherToken) {
				t.Errorf("log shows a token: %s", line)
			}
		}
	})
}

// TestTokenKeepsLastGoodWhenUnreadable: a file that disappears, turns
// empty or becomes unreadable keeps the last good token, with one warning
// for the whole episode; a good file again is taken at once.
func TestTokenKeepsLastGoodWhenUnreadable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		path := writeFile(t, dir, "token", goodToken)
		core, logs := observer.New(zapcore.InfoLevel)
		f := newAuthFixture(t, newToken(t, path, zap.New(core)))
		breaks := []struct {
			name      string
			breakFile func()
		}{
			{"removed", func() { os.Remove(path) }},
			{"empty", func() { writeFile(t, dir, "token", "  \n") }},
			{"a directory", func() { os.Remove(path); os.Mkdir(path, 0o700) }},
		}
		for _, b := range breaks {
			b.breakFile()
			time.Sleep(time.Second)
			if got := f.status(goodToken); got != http.StatusAccepted {
				t.Errorf("file %s: the last good token got %d, want 202", b.name, got)
			}
			if got := f.status(""); got != http.StatusUnauthorized {
				t.Errorf("file %s: no token got %d, want 401", b.name, got)
			}
		}
		warns := logs.FilterLevelExact(zapcore.WarnLevel)
		if warns.Len() != 1 {
			t.Fatalf("%d warnings, want 1 for the episode: %v", warns.Len(), warns.All())
		}
		if p, _ := warns.All()[0].ContextMap()["path"].(string); p != path {
			t.Errorf("warning names path %q, want %q", p, path)
		}
		os.Remove(path)
		writeFile(t, dir, "token", otherToken)
		time.Sleep(time.Second)
		if got := f.status(otherToken); got != http.StatusAccepted {
			t.Errorf("good again: the new token got %d, want 202", got)
		}
		if got := f.status(goodToken); got != http.StatusUnauthorized {
			t.Errorf("good again: the old token got %d, want 401", got)
		}
		// A later failure is a new episode, warned about again.
		os.Remove(path)
		time.Sleep(time.Second)
		f.status(otherToken)
		if n := logs.FilterLevelExact(zapcore.WarnLevel).Len(); n != 2 {
			t.Errorf("%d warnings after a second episode, want 2", n)
		}
	})
}
