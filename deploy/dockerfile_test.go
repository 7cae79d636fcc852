package deploy_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// The image's conventions (shared/reference/deploy-conventions.md §8).
const distrolessNonroot = "gcr.io/distroless/static-debian12:nonroot"

// imagePorts are the ports the image must EXPOSE: the proxy (--listen),
// the admin HTTP port (--admin-listen), the admin gRPC port
// (--admin-grpc-listen), and the port README's gRPC example gives the
// optional --grpc-listen.
var imagePorts = []string{"8080", "9090", "9091", "9092"}

// checkDockerfile parses a Dockerfile with BuildKit's own parser and
// instruction decoder and checks slotgate's image conventions.
func checkDockerfile(src string, b []byte) []error {
	res, err := parser.Parse(bytes.NewReader(b))
	if err != nil {
		return []error{fmt.Errorf("%s: BuildKit's parser: %w", src, err)}
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		return []error{fmt.Errorf("%s: BuildKit's instructions: %w", src, err)}
	}
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(src+": "+format, a...)) }
	if len(stages) < 2 {
		fail("want a multi-stage build (a Go build stage and a runtime stage), got %d stage(s)", len(stages))
		if len(stages) == 0 {
			return errs
		}
	}

	// A build stage: go build with CGO_ENABLED=0, -trimpath and -ldflags
	// stamping main.version and main.commit.
	builds := 0
	for _, st := range stages[:max(len(stages)-1, 1)] {
		cgoEnv := false
		for _, c := range st.Commands {
			switch c := c.(type) {
			case *instructions.EnvCommand:
				for _, kv := range c.Env {
					if kv.Key == "CGO_ENABLED" && kv.Value == "0" {
						cgoEnv = true
					}
				}
			case *instructions.RunCommand:
				line := strings.Join(c.CmdLine, " ")
				if !strings.Contains(line, "go build") {
					continue
				}
				builds++
				if !cgoEnv && !strings.Contains(line, "CGO_ENABLED=0") {
					fail("stage %q: go build without CGO_ENABLED=0", st.Name)
				}
				if !strings.Contains(line, "-trimpath") {
					fail("stage %q: go build without -trimpath", st.Name)
				}
				if !strings.Contains(line, "-ldflags") {
					fail("stage %q: go build without -ldflags", st.Name)
				}
				for _, v := range []string{"main.version=", "main.commit="} {
					if !strings.Contains(line, "-X "+v) && !strings.Contains(line, "-X="+v) {
						fail("stage %q: go build's -ldflags do not stamp %s", st.Name, strings.TrimSuffix(v, "="))
					}
				}
			}
		}
	}
	if builds == 0 {
		fail("no build stage runs go build")
	}

	// The runtime stage.
	final := stages[len(stages)-1]
	if final.BaseName != distrolessNonroot {
		fail("the final stage is FROM %s, want %s", final.BaseName, distrolessNonroot)
	}
	user := ""
	var exposed []string
	entrypoint := false
	copied := false
	for _, c := range final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.ExposeCommand:
			for _, p := range c.Ports {
				exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
			}
		case *instructions.EntrypointCommand:
			entrypoint = true
			if c.PrependShell {
				fail("ENTRYPOINT is in shell form; distroless has no shell: use the exec form [\"/slotgate\"]")
			}
		case *instructions.CopyCommand:
			if c.From != "" {
				copied = true
			}
		case *instructions.RunCommand:
			fail("the final stage runs %q: distroless has no shell", strings.Join(c.CmdLine, " "))
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	switch uid {
	case "":
		fail("the final stage sets no USER")
	case "0", "root":
		fail("the final stage runs as root (USER %s)", user)
	case "65532", "nonroot":
	default:
		fail("USER %s: want 65532:65532, distroless's nonroot", user)
	}
	for _, p := range imagePorts {
		if !slices.Contains(exposed, p) {
			fail("the final stage does not EXPOSE %s (exposes %v)", p, exposed)
		}
	}
	if !entrypoint {
		fail("the final stage has no ENTRYPOINT")
	}
	if !copied {
		fail("the final stage copies nothing from the build stage")
	}
	return errs
}

// TestDockerfile checks ../Dockerfile offline: multi-stage, a static
// trimmed build stamped with main.version and main.commit, distroless
// nonroot, USER 65532, the four ports exposed, an exec-form ENTRYPOINT.
func TestDockerfile(t *testing.T) {
	reportErrs(t, "", checkDockerfile(dockerfilePath, mustRead(t, dockerfilePath)))
}

func TestDockerfileFixtures(t *testing.T) {
	reportErrs(t, "", checkDockerfile("good", mustRead(t, "testdata/docker/good.Dockerfile")))
	expectErrs(t, checkDockerfile("bad", mustRead(t, "testdata/docker/bad.Dockerfile")),
		"want a multi-stage build",
		"go build without CGO_ENABLED=0",
		"go build without -trimpath",
		"do not stamp main.commit",
		"FROM golang:1.26, want "+distrolessNonroot,
		"runs as root",
		"does not EXPOSE 9091",
		"ENTRYPOINT is in shell form",
	)
}
