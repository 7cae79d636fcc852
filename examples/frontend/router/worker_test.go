package router_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/examples/frontend/router"
	"github.com/slotgate/slotgate/load/watch"
)

func TestParseWorker(t *testing.T) {
	tests := []struct {
		in      string
		want    router.Worker
		wantErr string
	}{
		{in: "proxy=http://127.0.0.1:8080,admin=http://127.0.0.1:9090",
			want: router.Worker{Name: "127.0.0.1:8080", Proxy: "http://127.0.0.1:8080", Admin: "http://127.0.0.1:9090"}},
		{in: "admin=http://h:9,proxy=https://h:8,name=w0", want: router.Worker{Name: "w0", Proxy: "https://h:8", Admin: "http://h:9"}},
		{in: "proxy=http://h:8", wantErr: `admin="": missing`},
		{in: "proxy=h:8,admin=http://h:9", wantErr: `proxy="h:8": want http[s]://host:port`},
		{in: "proxy=http://h:8?x=1,admin=http://h:9", wantErr: "want no query"},
		{in: "proxy=http://h:8,admin=http://h:9,proxy=http://h:7", wantErr: "proxy given twice"},
		{in: "proxy=http://h:8,admin=http://h:9,weight=2", wantErr: `unknown key "weight"`},
		{in: "http://h:8", wantErr: "is not key=value"},
		{in: "", wantErr: "is not key=value"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := router.ParseWorker(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), tc.in) {
					t.Fatalf("ParseWorker(%q) = %+v, %v; want an error naming the value and %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseWorker(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
		})
	}
}

// FuzzParseWorker: any input parses or fails, never panics, and what
// parses has a name and two http(s) URLs that parse again the same.
func FuzzParseWorker(f *testing.F) {
	f.Add("proxy=http://127.0.0.1:8080,admin=http://127.0.0.1:9090")
	f.Add("name=a,proxy=https://h:1/p,admin=http://h:2")
	f.Add("proxy=,admin==")
	f.Fuzz(func(t *testing.T, s string) {
		w, err := router.ParseWorker(s)
		if err != nil {
			return
		}
		if w.Name == "" || !strings.HasPrefix(w.Proxy, "http") || !strings.HasPrefix(w.Admin, "http") {
			t.Fatalf("ParseWorker(%q) = %+v", s, w)
		}
		again, err := router.ParseWorker("name=" + w.Name + ",proxy=" + w.Proxy + ",admin=" + w.Admin)
		if err == nil && again != w {
			t.Fatalf("ParseWorker(%q) = %+v, then %+v", s, w, again)
		}
	})
}

// New refuses bad options, naming each problem.
func TestNewRefuses(t *testing.T) {
	good := router.Worker{Name: "a", Proxy: "http://a:80", Admin: "http://a:90"}
	tests := []struct {
		name string
		opts router.Options
		want string
	}{
		{"policy", router.Options{Policy: "random"}, `policy "random"`},
		{"negative", router.Options{Retries: -1}, "must not be negative"},
		{"twice", router.Options{Workers: []router.Worker{good, good}}, "worker a given twice"},
		{"no name", router.Options{Workers: []router.Worker{{Proxy: "http://a:80", Admin: "http://a:90"}}}, "without a name"},
		{"bad url", router.Options{Workers: []router.Worker{{Name: "a", Proxy: "a:80", Admin: "http://a:90"}}}, `proxy="a:80"`},
		{"watch", router.Options{Watch: watch.Options{Expiry: -1}}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := router.New(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func watchClient(c *http.Client) watch.Options { return watch.Options{Client: c} }
