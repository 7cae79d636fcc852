// Package deps_test checks the import rules between slotgate's packages. It
// is a test-only package at the module root: it reads the dependency graph
// with `go list`, so it covers transitive imports too.
package deps_test

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/slotgate/slotgate"

// rule constrains the transitive (non-test) dependencies of one package.
type rule struct {
	pkg string // relative to the module, e.g. "limiter"
	// stdlibOnly allows only the standard library, plus the prefixes in
	// allow.
	stdlibOnly bool
	allow      []string
	// forbid lists import path prefixes the package must not depend on.
	// A prefix matches the path itself and everything under it.
	forbid []string
}

var (
	pkgConfig     = module + "/config"
	pkgMetrics    = module + "/metrics"
	pkgAdmin      = module + "/admin"
	pkgHealth     = module + "/health"
	pkgProxy      = module + "/proxy"
	pkgEngine     = module + "/engine"
	pkgLimiter    = module + "/limiter"
	pkgCmd        = module + "/cmd"
	pkgMain       = module + "/cmd/slotgate"
	pkgCommand    = module + "/command"
	pkgFlagenv    = module + "/internal/flagenv"
	pkgJSONAPI    = module + "/internal/jsonapi"
	pkgHTTPSyntax = module + "/internal/httpsyntax"
	pkgRawIO      = module + "/internal/rawio"

	envLib = "github.com/caarlos0/env/v11"

	// loadAllow is what load/scrape may depend on besides load: expfmt
	// and client_model, and what expfmt itself imports (protobuf for
	// client_model's types, goautoneg for content negotiation, go-abnf for
	// UTF-8 names).
	loadAllow = []string{
		"github.com/prometheus/common/expfmt", "github.com/prometheus/common/model",
		"github.com/prometheus/client_model", "google.golang.org/protobuf",
		"github.com/munnerz/goautoneg", "github.com/pandatix/go-abnf",
	}

	// grpcAllow is what generated gRPC code may depend on: grpc, protobuf,
	// and what grpc itself imports (x/net for HTTP/2, x/sys, x/text, and
	// genproto's google.rpc.Status).
	grpcAllow = []string{
		"google.golang.org/grpc", "google.golang.org/protobuf", "google.golang.org/genproto/googleapis/rpc",
		"golang.org/x/net", "golang.org/x/sys", "golang.org/x/text",
	}
)

var rules = []rule{
	// The limiter is the core; it must stay free of every dependency (and
	// so of proxy).
	{pkg: "limiter", stdlibOnly: true},
	// config keeps slotgate's settings and rules; the reading machinery it
	// shares with the other commands is internal/flagenv.
	{pkg: "config", stdlibOnly: true, allow: []string{envLib, pkgFlagenv}},
	{pkg: "internal/flagenv", stdlibOnly: true, allow: []string{envLib}},
	// zap brings multierr with it; nothing else may come in but the
	// pieces of a line written by hand.
	{pkg: "internal/logging", stdlibOnly: true, allow: []string{"go.uber.org/zap", "go.uber.org/multierr", module + "/internal/logline"}},
	// A log line's pieces written by hand, as zap's JSON encoder writes
	// them (the access log's): zap's buffer and field types, no logger.
	{pkg: "internal/logline", stdlibOnly: true, allow: []string{"go.uber.org/zap", "go.uber.org/multierr"}},
	// The JSON plumbing of the admin APIs (load/busy, admin/limits): the
	// standard library only, so that those may import it.
	{pkg: "internal/jsonapi", stdlibOnly: true},
	// The HTTP grammar checked on raw bytes, by the listener and the
	// proxy's early refusals: a leaf.
	{pkg: "internal/httpsyntax", stdlibOnly: true},
	// Raw system calls on non-blocking sockets: the standard library only.
	{pkg: "internal/rawio", stdlibOnly: true},
	// load is the vocabulary every load package shares (a count and its
	// source, a rank's load): the standard library only, so that the
	// standard-library-only load packages may import it.
	{pkg: "load", stdlibOnly: true},
	// scrape knows the engine's load: it parses and scrapes, nothing more
	// (style.md §3).
	{pkg: "load/scrape", stdlibOnly: true, allow: append([]string{module + "/load"}, loadAllow...)},
	// The admission core is the same for every protocol: it knows nothing
	// of HTTP or gRPC (nor of zap, which brings net/http), only the
	// limiter, the classifier API and slotgate's count of its flights.
	{pkg: "gate", stdlibOnly: true, allow: []string{pkgLimiter, module + "/admission", module + "/load"},
		forbid: []string{"net/http", "google.golang.org/grpc", pkgProxy, pkgEngine}},
	// The HTTP adapter: over the gate and the engine client, never the
	// wiring, the metrics or the configuration.
	{pkg: "proxy", forbid: []string{pkgConfig, pkgMetrics, pkgAdmin, pkgCmd, pkgCommand, "github.com/prometheus"}},
	// The gRPC adapter: over the gate, like the HTTP one, and beside it:
	// never the HTTP proxy, the engine's HTTP client, the wiring, the
	// metrics or the configuration.
	{pkg: "grpcproxy", forbid: []string{pkgProxy, pkgEngine, pkgConfig, pkgMetrics, pkgAdmin, pkgCmd, pkgCommand,
		"github.com/prometheus", "go.uber.org/zap"}},
	{pkg: "metrics", forbid: []string{pkgProxy, pkgConfig, pkgAdmin, pkgHealth, pkgCmd, pkgCommand}},
	{pkg: "admin", forbid: []string{pkgProxy, pkgConfig, pkgMetrics, pkgLimiter}},
	// The /limits API reads and sets the limiter's limits through an
	// interface: the limiter's types and the shared JSON plumbing, nothing
	// else of slotgate's.
	{pkg: "admin/limits", stdlibOnly: true, allow: []string{pkgLimiter, pkgJSONAPI}},
	{pkg: "health", forbid: []string{pkgProxy, pkgConfig, pkgMetrics, pkgLimiter}},
	// The demos' child processes: nothing of slotgate's.
	{pkg: "internal/childproc", stdlibOnly: true},
	{pkg: "internal/testlog", stdlibOnly: true},   // a test helper: nothing of slotgate's
	{pkg: "internal/epollinfo", stdlibOnly: true}, // a test helper: nothing of slotgate's
	{pkg: "internal/loopback", stdlibOnly: true},  // a test helper: nothing of slotgate's
	{pkg: "internal/bounded", stdlibOnly: true},   // a test helper: nothing of slotgate's
	// The engine client: net/http and sockets, and the HTTP/1.1 grammar
	// it reads the common answer's head with; nothing else of slotgate's.
	{pkg: "engine", stdlibOnly: true, allow: []string{pkgHTTPSyntax, pkgRawIO}},
	// The stream relay moves bytes between sockets: no HTTP beyond the
	// chunked framing it follows, nothing of slotgate's.
	{pkg: "relay", stdlibOnly: true, allow: []string{pkgRawIO}, forbid: []string{"net/http"}},
	// The load generator measures any OpenAI-compatible server: it knows
	// nothing of slotgate.
	{pkg: "loadgen", stdlibOnly: true},
	// Its gRPC protocol: loadgen's Sender over grpc and vLLM's generated
	// engine API, and still nothing of slotgate's own.
	{pkg: "loadgen/grpcload", stdlibOnly: true, allow: slices.Concat([]string{
		module + "/loadgen", module + "/protos/vllm/grpc/engine",
	}, grpcAllow)},
	// The estimator runs on the request path: standard library only.
	{pkg: "load/estimate", stdlibOnly: true},
	// The classifier plugin API is plain Go: plugins must not need to
	// build against slotgate's HTTP, limiter or configuration machinery.
	{pkg: "admission", stdlibOnly: true},
	{pkg: "admission/builtin", stdlibOnly: true, allow: []string{module + "/admission"}},
	// The policy file loader: YAML and the plugin API, nothing of slotgate's.
	{pkg: "admission/policy", stdlibOnly: true, allow: []string{module + "/admission", "go.yaml.in/yaml/v3"}},
	// slotgate's own count of its flights and the busy rule: plain logic
	// over load's vocabulary, free of the scraper and its parser. (Allowing
	// load allows the packages under it too, hence the forbid.)
	{pkg: "load/inflight", stdlibOnly: true, allow: []string{module + "/load", module + "/load/estimate"},
		forbid: []string{module + "/load/scrape"}},
	{pkg: "load/busy", stdlibOnly: true, allow: []string{module + "/load", pkgJSONAPI},
		forbid: []string{module + "/load/scrape"}},
	// report is the wire form that frontends import: nothing but the
	// standard library, so a router embedding load/watch pulls in no
	// scraper and no Prometheus.
	{pkg: "load/report", stdlibOnly: true},
	// The engine's exposition rewritten for endpoint pickers: text in,
	// text out, over load's vocabulary only.
	{pkg: "load/exposition", stdlibOnly: true, allow: []string{module + "/load"}},
	// Dynamo's event plane: its own MessagePack and NATS client over the
	// published snapshots, nothing else of slotgate's; the wiring is
	// command's.
	{pkg: "load/eventplane", stdlibOnly: true, allow: []string{module + "/load/report"}},
	{pkg: "load/watch", stdlibOnly: true, allow: []string{module + "/load/report"}},
	// The benchmark drives slotgate from outside, as a user would: it reads
	// the load snapshot's wire form and calls vLLM's gRPC Generate with the
	// generated client, and nothing else of slotgate's.
	{pkg: "bench/cmd/slotgate-bench", stdlibOnly: true, allow: slices.Concat([]string{
		module + "/load/report", module + "/bench/configs", module + "/protos/vllm/grpc/engine",
	}, grpcAllow)},
	{pkg: "bench/configs", stdlibOnly: true},
	// merge computes the snapshot from the load packages; it knows nothing
	// of HTTP proxying, metrics or configuration.
	{pkg: "load/merge", stdlibOnly: true, allow: append([]string{
		module + "/load", module + "/load/busy", module + "/load/inflight", module + "/load/report",
		module + "/load/scrape", pkgJSONAPI, // pkgJSONAPI through load/busy
	}, loadAllow...)},
	// The simulated engine stands for a real one: it knows nothing of slotgate.
	{pkg: "sim", forbid: []string{pkgProxy, pkgLimiter, pkgConfig, pkgMetrics, pkgAdmin, pkgHealth, pkgCmd, pkgCommand}},
	// Generated code: grpc and protobuf only, never slotgate's own packages
	// (style.md §3).
	{pkg: "protos/slotgate/load/v1", stdlibOnly: true, allow: grpcAllow},
	// vLLM's engine API as enginesim serves it: generated too.
	{pkg: "protos/vllm/grpc/engine", stdlibOnly: true, allow: grpcAllow},
	// The load service serves load/report's snapshots with the generated
	// code, and nothing else: the wiring is cmd's.
	{pkg: "load/loadgrpc", stdlibOnly: true, allow: slices.Concat([]string{
		module + "/load/report", module + "/protos/slotgate/load/v1",
	}, grpcAllow)},
	// ORCA's report for gRPC balancers: the snapshots, grpc-go's orca and
	// the xds protos it brings, nothing else: the wiring is cmd's.
	{pkg: "load/orcagrpc", stdlibOnly: true, allow: slices.Concat([]string{
		module + "/load/report", "github.com/cncf/xds/go", "github.com/envoyproxy/protoc-gen-validate",
	}, grpcAllow)},
}

func TestImportRules(t *testing.T) {
	g := newGraph(t)
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			pkg := module + "/" + r.pkg
			g.deps(t, pkg)
			for _, v := range g.violations(pkg, r.check) {
				t.Errorf("%s imports %s (%s); import chain: %s", pkg, v.dep, v.why, strings.Join(v.chain, " -> "))
			}
		})
	}
}

// check returns why the rule forbids dep, or "" when it allows it.
func (r rule) check(dep string) string {
	switch {
	case r.stdlibOnly && !isStdlib(dep) && !hasPrefix(dep, r.allow):
		if len(r.allow) > 0 {
			return "only the standard library and " + strings.Join(r.allow, ", ") + " are allowed"
		}
		return "only the standard library is allowed"
	case hasPrefix(dep, r.forbid):
		return "forbidden"
	}
	return ""
}

// TestOnlyCommandImportsConfig checks every package of the module: config
// is read once, in package command, and handed down as plain values. The
// programs built on command (cmd/slotgate, the examples) get it through
// command only.
func TestOnlyCommandImportsConfig(t *testing.T) {
	g := newGraph(t)
	pkgs := g.list(t, "./...")
	if !slices.Contains(pkgs, pkgConfig) || !slices.Contains(pkgs, pkgCommand) {
		t.Fatalf("go list ./... = %v, want it to include %s and %s", pkgs, pkgConfig, pkgCommand)
	}
	for _, pkg := range pkgs {
		if pkg == pkgCommand || pkg == pkgConfig {
			continue
		}
		t.Run(strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/"), func(t *testing.T) {
			g.deps(t, pkg)
			onlyCommand := func(dep string) string {
				if dep == pkgConfig {
					return "forbidden: only " + pkgCommand + " may import it"
				}
				return ""
			}
			for _, v := range g.violations(pkg, onlyCommand) {
				if len(v.chain) > 1 && v.chain[1] == pkgCommand {
					continue // a program built on command
				}
				t.Errorf("%s imports %s (%s); import chain: %s", pkg, v.dep, v.why, strings.Join(v.chain, " -> "))
			}
		})
	}
}

// TestRulesNameRealPackages keeps the table honest: a rule about a package
// that no longer exists would pass silently.
func TestRulesNameRealPackages(t *testing.T) {
	g := newGraph(t)
	pkgs := g.list(t, "./...")
	for _, r := range rules {
		if !slices.Contains(pkgs, module+"/"+r.pkg) {
			t.Errorf("rule for %s names no package of the module (go list ./... = %v)", r.pkg, pkgs)
		}
	}
}

// TestRuleCheck tests the checker itself, without the go command.
func TestRuleCheck(t *testing.T) {
	byPkg := map[string]rule{}
	for _, r := range rules {
		byPkg[r.pkg] = r
	}
	tests := []struct {
		pkg, dep string
		allowed  bool
	}{
		{"limiter", "sync/atomic", true},
		{"limiter", "vendor/golang.org/x/net/http2/hpack", true},
		{"limiter", "github.com/prometheus/client_golang/prometheus", false},
		{"limiter", "go.uber.org/zap", false},
		{"limiter", "golang.org/x/sys/unix", false},
		{"limiter", pkgProxy, false},
		{"config", "github.com/caarlos0/env/v11", true},
		{"config", "github.com/caarlos0/env/v11/sub", true},
		{"config", "github.com/caarlos0/env/v12", false},
		{"config", "github.com/caarlos0/env/v110", false},
		{"config", pkgLimiter, false},
		{"config", pkgFlagenv, true},
		{"config", module + "/internal/logging", false},
		{"internal/flagenv", envLib, true},
		{"internal/flagenv", pkgConfig, false},
		{"internal/flagenv", "go.uber.org/zap", false},
		{"internal/logging", "go.uber.org/zap/zapcore", true},
		{"internal/logging", "go.uber.org/multierr", true},
		{"internal/logging", envLib, false},
		{"internal/logging", pkgFlagenv, false},
		{"load", "github.com/prometheus/common/expfmt", false},
		{"load", module + "/load/scrape", false},
		{"load", "log/slog", true},
		{"load/scrape", module + "/load", true},
		{"load/scrape", "github.com/prometheus/common/expfmt", true},
		{"load/scrape", "github.com/prometheus/client_model/go", true},
		{"load/scrape", "google.golang.org/protobuf/proto", true},
		{"load/scrape", "github.com/prometheus/client_golang/prometheus", false},
		{"load/scrape", "github.com/prometheus/common/config", false},
		{"load/scrape", "go.uber.org/zap", false},
		{"load/scrape", pkgProxy, false},
		{"load/scrape", pkgLimiter, false},
		{"load/inflight", module + "/load", true},
		{"load/inflight", module + "/load/scrape", false},
		{"load/busy", module + "/load", true},
		{"load/busy", module + "/load/scrape", false},
		{"load/busy", "github.com/prometheus/common/expfmt", false},
		{"gate", pkgLimiter, true},
		{"gate", module + "/load/inflight", true},
		{"gate", "log/slog", true},
		{"gate", "net/http", false},
		{"gate", "net/http/httputil", false},
		{"gate", "google.golang.org/grpc", false},
		{"gate", "go.uber.org/zap", false},
		{"gate", pkgEngine, false},
		{"engine", "net/http", true},
		{"engine", pkgLimiter, false},
		{"proxy", pkgLimiter, true},
		{"proxy", "go.uber.org/zap", true},
		{"proxy", pkgConfig, false},
		{"proxy", pkgMain, false},
		{"proxy", "github.com/prometheus/client_golang/prometheus", false},
		{"proxy", "github.com/prometheusx/y", true},
		{"metrics", "github.com/prometheus/client_golang/prometheus", true},
		{"metrics", pkgLimiter, true},
		{"metrics", pkgProxy, false},
		{"metrics", pkgHealth, false},
		{"admin", "net/http", true},
		{"admin", pkgLimiter, false},
		{"admin", pkgMetrics, false},
		{"health", "go.uber.org/zap", true},
		{"health", pkgProxy, false},
		{"health", module + "/configx", true},
		{"protos/slotgate/load/v1", "google.golang.org/grpc/codes", true},
		{"protos/slotgate/load/v1", "google.golang.org/protobuf/types/known/timestamppb", true},
		{"protos/slotgate/load/v1", "golang.org/x/net/http2", true},
		{"protos/slotgate/load/v1", module + "/load/report", false},
		{"protos/slotgate/load/v1", "go.uber.org/zap", false},
		{"protos/slotgate/load/v1", "google.golang.org/grpcx", false},
		{"loadgen", "google.golang.org/grpc", false},
		{"loadgen/grpcload", module + "/loadgen", true},
		{"loadgen/grpcload", module + "/protos/vllm/grpc/engine", true},
		{"loadgen/grpcload", "google.golang.org/grpc/stats", true},
		{"loadgen/grpcload", module + "/sim", false},
		{"loadgen/grpcload", module + "/protos/slotgate/load/v1", false},
		{"loadgen/grpcload", pkgFlagenv, false},
		{"loadgen/grpcload", "go.uber.org/zap", false},
		{"load/loadgrpc", module + "/load/report", true},
		{"load/loadgrpc", module + "/protos/slotgate/load/v1", true},
		{"load/loadgrpc", "google.golang.org/grpc/health", true},
		{"load/loadgrpc", pkgProxy, false},
		{"load/loadgrpc", pkgConfig, false},
		{"load/loadgrpc", pkgMetrics, false},
		{"load/loadgrpc", pkgAdmin, false},
		{"load/loadgrpc", pkgMain, false},
		{"load/loadgrpc", pkgLimiter, false},
		{"load/loadgrpc", module + "/load/merge", false},
		{"load/loadgrpc", "go.uber.org/zap", false},
		{"load/loadgrpc", "github.com/prometheus/client_golang/prometheus", false},
	}
	for _, tt := range tests {
		r, ok := byPkg[tt.pkg]
		if !ok {
			t.Fatalf("no rule for %s", tt.pkg)
		}
		if why := r.check(tt.dep); (why == "") != tt.allowed {
			t.Errorf("rule %s on %s: %q, want allowed=%v", tt.pkg, tt.dep, why, tt.allowed)
		}
	}
}

// isStdlib reports whether path is in the standard library: its first
// element has no dot (github.com/..., go.uber.org/..., golang.org/x/... all
// do). The standard library's vendored packages start with "vendor/".
func isStdlib(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func hasPrefix(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// graph runs go list and remembers each package's direct imports, so that a
// failure can show how a forbidden package is reached.
type graph struct {
	goBin string

	mu      sync.Mutex
	imports map[string][]string
	depsOf  map[string][]string
}

func newGraph(t *testing.T) *graph {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipping import rules: the go command is not on PATH (%v)", err)
	}
	return &graph{goBin: goBin, imports: map[string][]string{}, depsOf: map[string][]string{}}
}

// goList runs go list in the module root, which is this test's directory.
func (g *graph) goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), g.goBin, append([]string{"list"}, args...)...)
	cmd.Dir = "."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// list returns the import paths of the packages that match pattern and
// have Go files to build (the module root holds only this test).
func (g *graph) list(t *testing.T, pattern string) []string {
	t.Helper()
	var pkgs []string
	for _, line := range g.goList(t, "-f", "{{if .GoFiles}}{{.ImportPath}}{{end}}", pattern) {
		if line != "" {
			pkgs = append(pkgs, line)
		}
	}
	return pkgs
}

// deps returns pkg and every package it depends on, tests excluded.
func (g *graph) deps(t *testing.T, pkg string) []string {
	t.Helper()
	g.mu.Lock()
	d, ok := g.depsOf[pkg]
	g.mu.Unlock()
	if ok {
		return d
	}
	lines := g.goList(t, "-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", pkg)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, line := range lines {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		d = append(d, fields[0])
		g.imports[fields[0]] = fields[1:]
	}
	if !slices.Contains(d, pkg) {
		t.Fatalf("go list -deps %s did not list the package itself: %v", pkg, d)
	}
	g.depsOf[pkg] = d
	return d
}

type violation struct {
	dep, why string
	chain    []string // from the package to dep, both included
}

// violations walks the imports of pkg (which deps must have loaded) breadth
// first and returns each package that check objects to, with a shortest
// import chain to it. It does not walk past such a package, so one bad
// import is reported once rather than with everything it drags in.
func (g *graph) violations(pkg string, check func(dep string) string) []violation {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []violation
	prev := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != pkg {
			if why := check(p); why != "" {
				var chain []string
				for q := p; q != ""; q = prev[q] {
					chain = append(chain, q)
				}
				slices.Reverse(chain)
				out = append(out, violation{dep: p, why: why, chain: chain})
				continue
			}
		}
		for _, next := range g.imports[p] {
			if _, seen := prev[next]; !seen {
				prev[next] = p
				queue = append(queue, next)
			}
		}
	}
	return out
}

// TestOnlyCommandsBuildTheLogger: the logger is built by the commands
// (those under cmd/, and package command, the slotgate program that
// cmd/slotgate and custom builds run) and passed down; no library package
// may construct one of its own.
func TestOnlyCommandsBuildTheLogger(t *testing.T) {
	const pkgLogging = module + "/internal/logging"
	g := newGraph(t)
	pkgs := g.list(t, "./...")
	if !slices.Contains(pkgs, pkgLogging) {
		t.Fatalf("go list ./... = %v, want it to include %s", pkgs, pkgLogging)
	}
	for _, pkg := range pkgs {
		if pkg == pkgLogging || pkg == pkgCommand || strings.HasPrefix(pkg, module+"/cmd/") ||
			strings.HasPrefix(pkg, module+"/examples/") {
			continue
		}
		t.Run(strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/"), func(t *testing.T) {
			g.deps(t, pkg)
			onlyCommands := func(dep string) string {
				if dep == pkgLogging {
					return "forbidden: only the commands under cmd/ and package command may build the logger"
				}
				return ""
			}
			for _, v := range g.violations(pkg, onlyCommands) {
				t.Errorf("%s imports %s (%s); import chain: %s", pkg, v.dep, v.why, strings.Join(v.chain, " -> "))
			}
		})
	}
}
