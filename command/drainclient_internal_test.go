package command

import "testing"

func TestAdminURL(t *testing.T) {
	for _, tc := range []struct{ listen, want string }{
		{":9090", "http://127.0.0.1:9090"},
		{"0.0.0.0:9090", "http://127.0.0.1:9090"},
		{"[::]:9090", "http://[::1]:9090"},
		{"10.0.0.7:9090", "http://10.0.0.7:9090"},
		{"localhost:9090", "http://localhost:9090"},
		{"[fd00::1]:9090", "http://[fd00::1]:9090"},
	} {
		if got, err := adminURL(tc.listen); err != nil || got != tc.want {
			t.Errorf("adminURL(%q) = %q, %v; want %q", tc.listen, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "9090", "host"} {
		if got, err := adminURL(bad); err == nil {
			t.Errorf("adminURL(%q) = %q, want an error", bad, got)
		}
	}
}
