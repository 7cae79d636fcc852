package loadgen

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// Mode is the load shape.
type Mode string

const (
	// Closed is the closed loop: Concurrency workers send back to back.
	Closed Mode = "closed"
	// Open is the open loop: Poisson arrivals at Rate per second.
	Open Mode = "open"
)

// The two endpoints the generator knows how to talk to.
const (
	EndpointCompletions = "/v1/completions"
	EndpointChat        = "/v1/chat/completions"
)

// Limits on Options, to keep a typo from exhausting the machine.
const (
	MaxConcurrency = 100_000
	MaxRate        = 1_000_000.0
	// MaxRetry bounds Options.Retry: more tries than this is a typo, not
	// a client.
	MaxRetry = 100
)

// Options configures a Generator. New checks every field; the command line
// defaults live in cmd/slotgate-loadgen.
type Options struct {
	// Mode is Closed or Open; empty means Closed.
	Mode Mode
	// Concurrency is the closed loop's number of workers, 1..MaxConcurrency.
	Concurrency int
	// Rate is the open loop's mean arrivals per second, in (0, MaxRate].
	Rate float64
	// MaxOutstanding caps the open loop's requests in flight, at least 1.
	MaxOutstanding int
	// Seed seeds every PRNG: arrival gaps, lengths and prompt text.
	Seed uint64
	// Requests stops issuing after this many requests; 0 for no count.
	Requests int64
	// Duration stops issuing after this long; 0 for no limit. At least one
	// of Requests and Duration must be set.
	Duration time.Duration
	// DrainTimeout is how long in-flight requests may take once issuing
	// stopped, before they are cancelled; 0 cancels them at once.
	DrainTimeout time.Duration

	// Sender, when set, sends each request instead of the Generator's own
	// OpenAI HTTP client (loadgen/grpcload sends vLLM's gRPC Generate). URL,
	// Endpoint and APIKey are the HTTP client's and must then be empty;
	// Model is optional, and only echoed in the report. The caller owns the
	// Sender and closes whatever it holds after Run.
	Sender Sender

	// URL is the base URL of slotgate or of the engine, http or https.
	URL string
	// Endpoint is EndpointCompletions or EndpointChat, appended to URL.
	Endpoint string
	// Model is the request's model.
	Model string
	// Stream asks for the answer as a stream: over HTTP, Server-Sent Events
	// with a usage chunk.
	Stream bool
	// PromptTokens is the prompt length, about 4 characters a token.
	PromptTokens Dist
	// MaxTokens is each request's max_tokens; ignore_eos is always set.
	MaxTokens Dist
	// Timeout bounds each try of a request; 0 for none.
	Timeout time.Duration
	// Retry is the most tries per request, the first included, 1 to
	// MaxRetry; 0 means 1, which never retries. Only a refusal is tried
	// again (see the package documentation).
	Retry int
	// Deadline bounds a whole request, every try and the waits between
	// them, counted from its first send; 0 for none. A request it ends
	// has the outcome "deadline".
	Deadline time.Duration
	// APIKey, when set, is sent as "Authorization: Bearer APIKey".
	APIKey string

	// Progress receives live progress; nil for none.
	Progress io.Writer
	// ProgressInterval is the time between progress lines; 0 for none.
	ProgressInterval time.Duration
	// Terminal makes progress one line rewritten with \r every 250ms
	// instead of a line per ProgressInterval.
	Terminal bool
}

// validate applies the defaults of empty Mode and Endpoint (without a
// Sender) and returns every problem of o, joined.
func (o *Options) validate() error {
	var errs []error
	bad := func(field string, value any, rule string) {
		errs = append(errs, fmt.Errorf("loadgen: Options.%s %v: %s", field, value, rule))
	}
	if o.Mode == "" {
		o.Mode = Closed
	}
	if o.Endpoint == "" && o.Sender == nil {
		o.Endpoint = EndpointCompletions
	}
	switch o.Mode {
	case Closed:
		if o.Concurrency < 1 || o.Concurrency > MaxConcurrency {
			bad("Concurrency", o.Concurrency, fmt.Sprintf("must be from 1 to %d", MaxConcurrency))
		}
	case Open:
		if !(o.Rate > 0 && o.Rate <= MaxRate) {
			bad("Rate", o.Rate, fmt.Sprintf("must be above 0 and at most %g", MaxRate))
		}
		if o.MaxOutstanding < 1 || o.MaxOutstanding > MaxConcurrency {
			bad("MaxOutstanding", o.MaxOutstanding, fmt.Sprintf("must be from 1 to %d", MaxConcurrency))
		}
	default:
		bad("Mode", o.Mode, "must be closed or open")
	}
	if o.Requests < 0 || o.Duration < 0 || (o.Requests == 0 && o.Duration == 0) {
		bad("Requests", o.Requests, fmt.Sprintf("and Duration %v: must not be negative, and one must be set", o.Duration))
	}
	if o.DrainTimeout < 0 || o.Timeout < 0 || o.ProgressInterval < 0 || o.Deadline < 0 {
		bad("DrainTimeout", o.DrainTimeout, "and Timeout, Deadline and ProgressInterval must not be negative")
	}
	if o.Retry == 0 {
		o.Retry = 1
	}
	if o.Retry < 1 || o.Retry > MaxRetry {
		bad("Retry", o.Retry, fmt.Sprintf("must be from 1 to %d tries", MaxRetry))
	}
	if o.Sender != nil {
		if o.URL != "" || o.Endpoint != "" || o.APIKey != "" {
			bad("URL", o.URL, "and Endpoint "+o.Endpoint+" and APIKey are for HTTP: they must be empty with a Sender")
		}
	} else {
		o.checkHTTP(bad)
	}
	if !o.PromptTokens.Valid() || !o.MaxTokens.Valid() {
		bad("PromptTokens", o.PromptTokens, "and MaxTokens "+o.MaxTokens.String()+" must be valid distributions")
	}
	return errors.Join(errs...)
}

// checkHTTP reports the problems of the HTTP client's settings to bad.
func (o *Options) checkHTTP(bad func(field string, value any, rule string)) {
	if err := checkURL(o.URL); err != nil {
		bad("URL", o.URL, err.Error())
	}
	if o.Endpoint != EndpointCompletions && o.Endpoint != EndpointChat {
		bad("Endpoint", o.Endpoint, "must be "+EndpointCompletions+" or "+EndpointChat)
	}
	if strings.TrimSpace(o.Model) == "" {
		bad("Model", o.Model, "must not be empty")
	}
}

// checkURL accepts an http or https URL with a host and no query or
// fragment.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("parse: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an http:// or https:// URL with a host")
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return errors.New("must not have a query or fragment")
	}
	return nil
}
