package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// These tests put a gRPC client that no one here wrote, grpcurl, in
// front of the real binary: what it prints is what a person debugging
// slotgate by hand would see.

// grpcurlModule is the pinned client, built once per run by go install.
const grpcurlModule = "github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.4"

// grpcurlBuildLimit bounds that build: a cold module cache downloads and
// compiles grpcurl's dependencies, which takes about a minute.
const grpcurlBuildLimit = 5 * time.Minute

// grpcurlMaxTime is grpcurl's own -max-time, in seconds, under waitLimit
// so that grpcurl reports a slow call itself before the test kills it.
const grpcurlMaxTime = "20"

// testServiceMethod is the call every test makes: server streaming, one
// message per response parameter.
const testServiceMethod = "grpc.testing.TestService/StreamingOutputCall"

// grpcurlBuild is the outcome of the one build, shared by every test.
var grpcurlBuild struct {
	once sync.Once
	path string
	err  error
}

// grpcurlBinary returns grpcurl's path, building it into binDir the first
// time, or skips the test when it cannot be built (no network or module
// proxy), naming the command that failed.
func grpcurlBinary(t *testing.T) string {
	t.Helper()
	grpcurlBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), grpcurlBuildLimit)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "install", grpcurlModule)
		// Outside this module, so that only grpcurl's own go.mod counts;
		// GOFLAGS is cleared so that no -mod setting of ours applies to it.
		cmd.Dir = binDir
		cmd.Env = append(os.Environ(), "GOBIN="+binDir, "GOFLAGS=", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			grpcurlBuild.err = fmt.Errorf("GOBIN=%s GOFLAGS= go install %s: %w\n%s", binDir, grpcurlModule, err, out)
			return
		}
		grpcurlBuild.path = filepath.Join(binDir, "grpcurl")
	})
	if grpcurlBuild.err != nil {
		t.Skipf("grpcurl could not be built, so this test cannot run: %s", grpcurlBuild.err)
	}
	return grpcurlBuild.path
}

// grpcurlRun is what one grpcurl run printed and its exit status.
type grpcurlRun struct {
	stdout, stderr string
	code           int
}

func (r grpcurlRun) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// grpcurl runs the client in plaintext (h2c, as slotgate's ports serve)
// with args after that, bounded by -max-time and by waitLimit.
func grpcurl(t *testing.T, args ...string) grpcurlRun {
	t.Helper()
	bin := grpcurlBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-plaintext", "-max-time", grpcurlMaxTime}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("grpcurl %s: still running after %s", strings.Join(args, " "), waitLimit)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("grpcurl %s: %v", strings.Join(args, " "), err)
	}
	return grpcurlRun{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// grpcurlExitCode is how grpcurl exits when the call ends in a status
// other than OK: 64 plus the status code.
func grpcurlExitCode(code int) int { return 64 + code }

// writeProtoset writes the FileDescriptorSet that grpcurl's -protoset
// reads: the file declaring service and every file it imports, imports
// first, as protoc --include_imports would. It returns the file's path.
func writeProtoset(t *testing.T, service protoreflect.FullName) string {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(service)
	if err != nil {
		t.Fatalf("descriptor of %s: %v", service, err)
	}
	set := &descriptorpb.FileDescriptorSet{}
	seen := map[string]bool{}
	var add func(protoreflect.FileDescriptor)
	add = func(f protoreflect.FileDescriptor) {
		if seen[f.Path()] {
			return
		}
		seen[f.Path()] = true
		imports := f.Imports()
		for i := range imports.Len() {
			add(imports.Get(i).FileDescriptor)
		}
		set.File = append(set.File, protodesc.ToFileDescriptorProto(f))
	}
	add(d.ParentFile())
	b, err := proto.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "grpc_testing.protoset")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// streamingCallArgs are grpcurl's arguments for a StreamingOutputCall of
// two messages, each echoing the payload "prompt".
func streamingCallArgs(addr string) []string {
	return []string{"-d", `{"payload":{"body":"` + base64.StdEncoding.EncodeToString([]byte("prompt")) + `"},` +
		`"response_parameters":[{"size":3},{"size":3}]}`, addr, testServiceMethod}
}

// checkStreamingOutput checks that r is a successful StreamingOutputCall
// as streamingCallArgs asks for it: two JSON messages echoing the payload.
func checkStreamingOutput(t *testing.T, r grpcurlRun) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("grpcurl %s: %s", testServiceMethod, r)
	}
	type message struct {
		Payload struct {
			Body []byte `json:"body"` // bytes are base64 in protobuf's JSON, as in encoding/json
		} `json:"payload"`
	}
	var got []message
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	for {
		var m message
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("grpcurl printed something other than JSON messages: %v\n%s", err, r)
		}
		got = append(got, m)
	}
	if len(got) != 2 || string(got[0].Payload.Body) != "prompt" || string(got[1].Payload.Body) != "prompt" {
		t.Errorf("grpcurl printed %d messages, want 2 echoing the payload %q:\n%s", len(got), "prompt", r)
	}
}

// waitReady waits for slotgate's readiness, which grpc.health.v1 reports.
func waitReady(t *testing.T, sg *sidecar) {
	t.Helper()
	eventually(t, "readiness", func() bool { s, _ := get(t, sg.admin+"/readyz"); return s == http.StatusOK })
}

// grpcListenAddr is the --grpc-listen address from slotgate's listening
// line.
func grpcListenAddr(t *testing.T, sg *sidecar) string {
	t.Helper()
	var line struct {
		GRPCProxy string `json:"grpc_proxy"`
	}
	if err := json.Unmarshal([]byte(sg.log.WaitFor(t, `"msg":"listening"`, waitLimit)), &line); err != nil {
		t.Fatalf("parse the listening line: %v", err)
	}
	if line.GRPCProxy == "" || line.GRPCProxy == "off" {
		t.Fatalf("no --grpc-listen address in the listening line")
	}
	return line.GRPCProxy
}

// TestGrpcurlWithReflection: grpcurl discovers the engine's services by
// server reflection through slotgate, on the proxy port and on
// --grpc-listen, calls one, and reads slotgate's own grpc.health.v1.
func TestGrpcurlWithReflection(t *testing.T) {
	t.Parallel()
	grpcurlBinary(t) // skip before starting anything when there is no grpcurl
	httpEng := newEngine(t)
	eng := newGRPCEngine(t, func(srv *grpc.Server) { reflection.Register(srv) })
	eng.release()
	// Two slots: grpcurl keeps its reflection stream open while it makes
	// the call, and both go through admission.
	sg := start(t, httpEng.url(), nil, "--engine-grpc-url", "http://"+eng.addr,
		"--engine-request-limit", "2", "--request-queue-limit", "0", "--grpc-listen", "127.0.0.1:0")
	waitReady(t, sg)

	for _, port := range []struct{ name, addr string }{
		{"proxy port", strings.TrimPrefix(sg.proxy, "http://")},
		{"grpc-listen", grpcListenAddr(t, sg)},
	} {
		t.Run(port.name, func(t *testing.T) {
			r := grpcurl(t, port.addr, "list")
			if r.code != 0 || !strings.Contains("\n"+r.stdout, "\ngrpc.testing.TestService\n") {
				t.Errorf("grpcurl list: want grpc.testing.TestService from the engine's reflection; %s", r)
			}
			checkStreamingOutput(t, grpcurl(t, streamingCallArgs(port.addr)...))

			// Described by the engine's reflection, answered by slotgate:
			// the engine serves no health service.
			r = grpcurl(t, port.addr, "grpc.health.v1.Health/Check")
			var health struct{ Status string }
			if err := json.Unmarshal([]byte(r.stdout), &health); r.code != 0 || err != nil || health.Status != "SERVING" {
				t.Errorf("grpcurl grpc.health.v1.Health/Check: want status SERVING; %s", r)
			}
		})
	}
	if got := eng.calls.Load(); got != 2 {
		t.Errorf("the engine took %d calls, want one per port", got)
	}
}

// TestGrpcurlWithProtoset: with a FileDescriptorSet and no reflection,
// grpcurl makes the same call; and reflection is the engine's to answer,
// so without it on the engine, grpcurl's list fails.
func TestGrpcurlWithProtoset(t *testing.T) {
	t.Parallel()
	grpcurlBinary(t)
	protoset := writeProtoset(t, "grpc.testing.TestService")
	httpEng := newEngine(t)
	eng := newGRPCEngine(t) // no reflection
	eng.release()
	sg := start(t, httpEng.url(), nil, "--engine-grpc-url", "http://"+eng.addr, "--engine-request-limit", "2")
	waitReady(t, sg)
	addr := strings.TrimPrefix(sg.proxy, "http://")

	args := append([]string{"-protoset", protoset, "-use-reflection=false"}, streamingCallArgs(addr)...)
	checkStreamingOutput(t, grpcurl(t, args...))
	if got := eng.calls.Load(); got != 1 {
		t.Errorf("the engine took %d calls, want 1", got)
	}

	r := grpcurl(t, addr, "list")
	if r.code == 0 || !strings.Contains(r.stderr, "does not support the reflection API") {
		t.Errorf("grpcurl list with no reflection on the engine: want grpcurl's error that the server lacks reflection; %s", r)
	}
}

// TestGrpcurlSeesRefusal: with both slots held and no queue, grpcurl's
// call is refused, and grpcurl shows RESOURCE_EXHAUSTED with Dynamo's
// message and slotgate's trailers, and exits non-zero. The call never
// reaches the engine.
func TestGrpcurlSeesRefusal(t *testing.T) {
	t.Parallel()
	grpcurlBinary(t)
	protoset := writeProtoset(t, "grpc.testing.TestService")
	httpEng := newEngine(t)
	eng := newGRPCEngine(t) // holds calls until released
	sg := start(t, httpEng.url(), nil, "--engine-grpc-url", "http://"+eng.addr,
		"--engine-request-limit", "2", "--request-queue-limit", "0", "--retry-after", "3s")
	waitReady(t, sg)
	addr := strings.TrimPrefix(sg.proxy, "http://")
	client := testgrpc.NewTestServiceClient(dialGRPC(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()

	holders := make(chan error, 2)
	for range 2 {
		go func() { holders <- streamCall(ctx, client) }()
	}
	eventually(t, "2 calls held at the engine", func() bool { return eng.inFlight.Load() == 2 })

	// The protoset, not reflection: a reflection stream would be refused
	// first, and grpcurl would report that instead of the call.
	args := append([]string{"-v", "-protoset", protoset, "-use-reflection=false", "-H", "x-request-id: grpcurl-refused"},
		streamingCallArgs(addr)...)
	r := grpcurl(t, args...)
	if r.code != grpcurlExitCode(8) { // RESOURCE_EXHAUSTED
		t.Errorf("grpcurl exit status %d, want %d for RESOURCE_EXHAUSTED; %s", r.code, grpcurlExitCode(8), r)
	}
	for _, want := range []string{"Code: ResourceExhausted", "Message: Server overloaded: worker at capacity"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("grpcurl's error lacks %q; %s", want, r)
		}
	}
	_, trailers, _ := strings.Cut(r.stdout, "Response trailers received:")
	for _, want := range []string{"x-slotgate-reason: capacity", "retry-after: 3", "x-request-id: grpcurl-refused"} {
		if !strings.Contains(trailers, want) {
			t.Errorf("grpcurl -v shows no trailer %q; %s", want, r)
		}
	}

	eng.release()
	for range 2 {
		if err := <-holders; err != nil {
			t.Errorf("a held call: %v", err)
		}
	}
	if got := eng.calls.Load(); got != 2 {
		t.Errorf("the engine took %d calls, want only the 2 held", got)
	}
	if got := sg.metric("slotgate_requests_total", "outcome", "rejected_capacity"); got != 1 {
		t.Errorf("rejected_capacity = %v, want 1", got)
	}
}
