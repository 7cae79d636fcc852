package command_test

import (
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/slotgate/slotgate/command"
)

// TestRunRefusesConfiguration: a bad flag, variable or admission file
// stops Run before it listens, with 2 and a line naming the setting as it
// was given: the flag, or the variable.
func TestRunRefusesConfiguration(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "bad flag value", args: []string{"--drain-delay", "soon"},
			want: `slotgate: --drain-delay: must be a duration such as 500ms, 5s or 2m, got "soon"`},
		{name: "bad variable", env: map[string]string{"SLOTGATE_SHUTDOWN_TIMEOUT": "0s"},
			want: `slotgate: SLOTGATE_SHUTDOWN_TIMEOUT: must be positive, got "0s"`},
		{name: "limit of zero", args: []string{"--engine-request-limit", "0"},
			want: `slotgate: --engine-request-limit: must be a positive integer, got "0"`},
		{name: "unknown stream relay", env: map[string]string{"SLOTGATE_STREAM_RELAY": "kqueue"},
			want: `slotgate: SLOTGATE_STREAM_RELAY: must be one of auto, epoll, off, got "kqueue"`},
		{name: "processors as a CPU quantity", env: map[string]string{"SLOTGATE_MAX_PROCS": "500m"},
			want: `slotgate: SLOTGATE_MAX_PROCS: must be auto, or an integer from 0 (auto) to 1024, got "500m"`},
		{name: "unknown flag", args: []string{"--drain-delayed", "1s"}, want: `flag provided but not defined: -drain-delayed`},
		{name: "admission file missing, by flag", args: []string{"--admission-config", "/nonexistent/policy.yaml"},
			want: `slotgate: --admission-config: admission config: open /nonexistent/policy.yaml`},
		{name: "admission file missing, by variable", env: map[string]string{"SLOTGATE_ADMISSION_CONFIG": "/nonexistent/policy.yaml"},
			want: `slotgate: SLOTGATE_ADMISSION_CONFIG: admission config: open /nonexistent/policy.yaml`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--admin-grpc-listen", "off"}, tt.args...)
			sg := launch(t, tt.env, args...)
			if code := sg.wait(); code != 2 {
				t.Fatalf("Run returned %d, want 2", code)
			}
			out := sg.log.String()
			if !strings.Contains(out, tt.want) {
				t.Errorf("standard error lacks %q:\n%s", tt.want, out)
			}
			if strings.Contains(out, "listening") {
				t.Errorf("Run listened with a refused configuration:\n%s", out)
			}
		})
	}
}

// TestRunHelpAndVersion: --help and --version print to standard output and
// return 0 without serving.
func TestRunHelpAndVersion(t *testing.T) {
	tests := []struct {
		arg, want string
	}{
		{arg: "--help", want: "--engine-request-limit"},
		{arg: "--version", want: "slotgate v-test (c-test)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			sg := launch(t, nil, tt.arg)
			if code := sg.wait(); code != 0 {
				t.Fatalf("Run returned %d, want 0", code)
			}
			if out := sg.stdout.String(); !strings.Contains(out, tt.want) {
				t.Errorf("standard output lacks %q:\n%s", tt.want, out)
			}
			if out := sg.log.String(); out != "" {
				t.Errorf("standard error is not empty:\n%s", out)
			}
		})
	}
}

// TestRunListenerInUse: a port already taken fails start-up with 1 and a
// line naming the flag and the address, and leaves nothing running.
func TestRunListenerInUse(t *testing.T) {
	for _, flag := range []string{"--listen", "--admin-listen", "--admin-grpc-listen"} {
		t.Run(flag, func(t *testing.T) {
			ignore := goleak.IgnoreCurrent()
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			addrs := map[string]string{"--listen": "127.0.0.1:0", "--admin-listen": "127.0.0.1:0", "--admin-grpc-listen": "127.0.0.1:0"}
			addrs[flag] = taken.Addr().String()
			var args []string
			for f, a := range addrs {
				args = append(args, f, a)
			}
			sg := launch(t, nil, append(args, "--engine-metrics-dialect", "none")...)
			if code := sg.wait(); code != 1 {
				t.Fatalf("Run returned %d, want 1", code)
			}
			command.NoneRunning(t)
			line := sg.log.WaitFor(t, `"msg":"start-up failed"`, waitLimit)
			if want := "listen on " + flag + " " + taken.Addr().String(); !strings.Contains(line, want) {
				t.Errorf("the failure %q does not name %q", line, want)
			}
			if !strings.Contains(line, "address already in use") {
				t.Errorf("the failure %q does not say the address is in use", line)
			}
			goleak.VerifyNone(t, ignore)
		})
	}
}

// TestRunListenerInUseNamesTheVariable: a port given by its variable is
// reported under the variable's name, as the user wrote it.
func TestRunListenerInUseNamesTheVariable(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	sg := launch(t, map[string]string{"SLOTGATE_LISTEN": taken.Addr().String()},
		"--admin-listen", "127.0.0.1:0", "--engine-metrics-dialect", "none")
	if code := sg.wait(); code != 1 {
		t.Fatalf("Run returned %d, want 1", code)
	}
	line := sg.log.WaitFor(t, `"msg":"start-up failed"`, waitLimit)
	if want := "listen on SLOTGATE_LISTEN " + taken.Addr().String(); !strings.Contains(line, want) {
		t.Errorf("the failure %q does not name %q", line, want)
	}
}
