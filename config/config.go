package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// DefaultOverloadStatus is the status of a capacity rejection when
// DYN_HTTP_OVERLOAD_STATUS_CODE is unset or unusable, as in Dynamo.
const DefaultOverloadStatus = 529

// Config is slotgate's validated configuration. Each field names its flag
// and environment variable; the defaults are in settings.go.
type Config struct {
	// EngineRequestLimit is N (--engine-request-limit,
	// DYN_ENGINE_REQUEST_LIMIT). Zero means unset: no cap.
	EngineRequestLimit int
	// RequestQueueLimit is Q (--request-queue-limit,
	// DYN_DYNAMO_REQUEST_QUEUE_LIMIT, default 16). Zero when N is unset.
	RequestQueueLimit int
	// OverloadStatus is the status of capacity rejections
	// (--overload-status-code, DYN_HTTP_OVERLOAD_STATUS_CODE, default 529).
	OverloadStatus int
	// QueueTimeout bounds the queue wait (--queue-timeout,
	// SLOTGATE_QUEUE_TIMEOUT); zero means none.
	QueueTimeout time.Duration
	// Listen is the proxy address (--listen, SLOTGATE_LISTEN, ":8080").
	Listen string
	// EngineURL is the engine's base URL (--engine-url, SLOTGATE_ENGINE_URL).
	EngineURL *url.URL
	// AdminListen is the admin address (--admin-listen,
	// SLOTGATE_ADMIN_LISTEN, ":9090").
	AdminListen string
	// EngineHealthPath is polled for readiness (--engine-health-path,
	// SLOTGATE_ENGINE_HEALTH_PATH, "/health").
	EngineHealthPath string
	// PassthroughPaths are proxied without a slot (--passthrough-paths,
	// SLOTGATE_PASSTHROUGH_PATHS).
	PassthroughPaths []string
	// MaxRequestBodyBytes bounds request bodies (--max-request-body-bytes,
	// SLOTGATE_MAX_REQUEST_BODY_BYTES, 32 MiB).
	MaxRequestBodyBytes int64
	// RetryAfter is sent with overload answers (--retry-after,
	// SLOTGATE_RETRY_AFTER, 1s); zero sends none.
	RetryAfter time.Duration
	// ShutdownTimeout bounds the final drain (--shutdown-timeout,
	// SLOTGATE_SHUTDOWN_TIMEOUT, 60s).
	ShutdownTimeout time.Duration
	// DrainDelay is how long new requests are still served after a drain
	// starts (--drain-delay, SLOTGATE_DRAIN_DELAY, 5s).
	DrainDelay time.Duration
	// LogLevel is debug, info, warn or error (--log-level, SLOTGATE_LOG_LEVEL).
	LogLevel string
	// LogFormat is json or console (--log-format, SLOTGATE_LOG_FORMAT).
	LogFormat string

	// ShowVersion is set by --version.
	ShowVersion bool
	// Warnings are problems that did not stop start-up, to be logged once.
	Warnings []string
	// Sources maps each flag name to where its value came from: "flag",
	// the environment variable's name, or "default".
	Sources map[string]string
}

// Load parses args (without the program name) and environ, a map of
// environment variables. It returns flag.ErrHelp for -h or --help, and
// otherwise an error that joins every problem found, one per line.
func Load(args []string, environ map[string]string) (Config, error) {
	if environ == nil {
		// env.ParseWithOptions reads os.Environ when given a nil map.
		environ = map[string]string{}
	}
	var r raw
	if err := env.ParseWithOptions(&r, env.Options{Environment: environ}); err != nil {
		return Config{}, fmt.Errorf("read environment: %w", err)
	}
	list := settings(&r)
	fs := flag.NewFlagSet("slotgate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	for _, s := range list {
		fs.StringVar(s.value, s.flag, *s.value, s.usage)
	}
	var c Config
	fs.BoolVar(&c.ShowVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Config{}, err
		}
		return Config{}, fmt.Errorf("command line: %w", err)
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("command line: unexpected argument %q", fs.Arg(0))
	}
	c.Sources = sources(fs, list, environ)
	v := validator{sources: c.Sources, list: list}
	c.fill(&r, &v)
	c.Warnings = v.warnings
	return c, errors.Join(v.errs...)
}

// sources records where each setting's value came from.
func sources(fs *flag.FlagSet, list []setting, environ map[string]string) map[string]string {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	out := make(map[string]string, len(list))
	for _, s := range list {
		switch {
		case set[s.flag]:
			out[s.flag] = "flag"
		case environ[s.env] != "":
			out[s.flag] = s.env
		default:
			out[s.flag] = "default"
		}
	}
	return out
}

func (c *Config) fill(r *raw, v *validator) {
	c.EngineRequestLimit = v.engineLimit("engine-request-limit", r.EngineRequestLimit)
	if r.EngineRequestLimit != "" {
		c.RequestQueueLimit = v.intAtLeast("request-queue-limit", r.RequestQueueLimit, 2)
	}
	c.OverloadStatus = v.overloadStatus("overload-status-code", r.OverloadStatusCode)
	c.QueueTimeout = v.duration("queue-timeout", r.QueueTimeout, 0)
	c.Listen = v.address("listen", r.Listen)
	c.AdminListen = v.address("admin-listen", r.AdminListen)
	if c.Listen != "" && c.Listen == c.AdminListen && !strings.HasSuffix(c.Listen, ":0") {
		v.fail("admin-listen", r.AdminListen, "must differ from the proxy address "+v.name("listen"))
	}
	c.EngineURL = v.engineURL("engine-url", r.EngineURL)
	c.EngineHealthPath = v.path("engine-health-path", r.EngineHealthPath)
	c.PassthroughPaths = v.paths("passthrough-paths", r.PassthroughPaths)
	c.MaxRequestBodyBytes = int64(v.intAtLeast("max-request-body-bytes", r.MaxRequestBody, 1))
	c.RetryAfter = v.duration("retry-after", r.RetryAfter, 0)
	if c.RetryAfter%time.Second != 0 {
		v.fail("retry-after", r.RetryAfter, "must be whole seconds")
	}
	c.ShutdownTimeout = v.duration("shutdown-timeout", r.ShutdownTimeout, time.Nanosecond)
	c.DrainDelay = v.duration("drain-delay", r.DrainDelay, 0)
	c.LogLevel = v.oneOf("log-level", r.LogLevel, "debug", "info", "warn", "error")
	c.LogFormat = v.oneOf("log-format", r.LogFormat, "json", "console")
}

// validator converts text to typed values and collects every problem.
type validator struct {
	sources  map[string]string
	list     []setting
	errs     []error
	warnings []string
}

// name is how a problem refers to a setting: by the flag if the value came
// from the command line, by the variable if it came from the environment.
func (v *validator) name(flagName string) string {
	src := v.sources[flagName]
	switch src {
	case "flag":
		return "--" + flagName
	case "default":
		return "--" + flagName + " (default)"
	default:
		return src
	}
}

func (v *validator) fail(flagName, value, rule string) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s, got %q", v.name(flagName), rule, value))
}

func (v *validator) engineLimit(flagName, s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 1 {
		v.fail(flagName, s, "must be a positive integer")
		return 0
	}
	return n
}

func (v *validator) intAtLeast(flagName, s string, min int) int {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < min {
		v.fail(flagName, s, fmt.Sprintf("must be an integer of at least %d", min))
		return 0
	}
	return n
}

// overloadStatus follows Dynamo's parse_overload_status_code: trim, parse,
// accept 200 through 999, and fall back to 529 otherwise, with a warning.
func (v *validator) overloadStatus(flagName, s string) int {
	code, ok := ParseOverloadStatus(s)
	if !ok {
		v.warnings = append(v.warnings, fmt.Sprintf(
			"%s: %q is not a status from 200 through 999; using %d", v.name(flagName), s, DefaultOverloadStatus))
	}
	return code
}

// ParseOverloadStatus applies the DYN_HTTP_OVERLOAD_STATUS_CODE rules to s.
// It returns the status to use and whether s was usable as given.
func ParseOverloadStatus(s string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 200 || n > 999 {
		return DefaultOverloadStatus, false
	}
	return n, true
}

func (v *validator) duration(flagName, s string, min time.Duration) time.Duration {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		v.fail(flagName, s, "must be a duration such as 500ms, 5s or 2m")
		return 0
	}
	if d < min {
		if min == 0 {
			v.fail(flagName, s, "must not be negative")
		} else {
			v.fail(flagName, s, "must be positive")
		}
		return 0
	}
	return d
}

func (v *validator) address(flagName, s string) string {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		v.fail(flagName, s, "must be host:port or :port")
		return ""
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		v.fail(flagName, s, "must have a port from 0 through 65535")
		return ""
	}
	return net.JoinHostPort(host, port)
}

func (v *validator) engineURL(flagName, s string) *url.URL {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.fail(flagName, s, "must be an http:// or https:// URL with a host")
		return nil
	}
	if u.RawQuery != "" || u.Fragment != "" {
		v.fail(flagName, s, "must not have a query or fragment")
		return nil
	}
	return u
}

func (v *validator) path(flagName, s string) string {
	if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " ?#") {
		v.fail(flagName, s, "must be a path starting with /")
		return ""
	}
	return s
}

func (v *validator) paths(flagName, s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, " ?#") {
			v.fail(flagName, s, fmt.Sprintf("each entry must be a path starting with /, %q is not", p))
			return nil
		}
		out = append(out, p)
	}
	return out
}

func (v *validator) oneOf(flagName, s string, allowed ...string) string {
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	v.fail(flagName, s, "must be one of "+strings.Join(allowed, ", "))
	return ""
}
