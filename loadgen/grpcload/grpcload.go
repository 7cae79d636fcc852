package grpcload

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/slotgate/slotgate/loadgen"
	enginepb "github.com/slotgate/slotgate/protos/vllm/grpc/engine"
)

// RetryAfterKey is the trailer in which slotgate's gRPC proxy sends, with
// a refusal, the whole seconds to wait before trying again, as HTTP's
// Retry-After.
const RetryAfterKey = "retry-after"

// MaxMessageBytes bounds one message received. A complete message repeats
// every output token id, about 5 bytes each: 64 MiB holds far more than
// loadgen.MaxDistValue of them.
const MaxMessageBytes = 64 << 20

// Options configures New.
type Options struct {
	// URL is the gRPC server: http://host:port, cleartext HTTP/2, as
	// slotgate's --engine-grpc-url reads it; see ParseURL.
	URL string
}

// Sender sends vLLM Generate calls; see the package documentation. Make
// it with New and Close it when done.
type Sender struct {
	conn   *grpc.ClientConn
	client enginepb.VllmEngineClient
	target string

	idPrefix string        // random, so two Senders' request ids differ
	next     atomic.Uint64 // the last request id's number
}

// New checks opts and returns a Sender with its connection made but not
// yet dialled: the first call dials. It fails on a bad URL.
func New(opts Options) (*Sender, error) {
	addr, err := ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("grpcload: URL %q: %w", opts.URL, err)
	}
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithStatsHandler(trailerWatch{}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes)),
	)
	if err != nil {
		return nil, fmt.Errorf("grpcload: client for %s: %w", addr, err)
	}
	return &Sender{
		conn:     conn,
		client:   enginepb.NewVllmEngineClient(conn),
		target:   "grpc://" + addr + enginepb.VllmEngine_Generate_FullMethodName,
		idPrefix: "loadgen-" + strings.ToLower(rand.Text()[:10]) + "-",
	}, nil
}

// ParseURL checks a server URL, http://host:port with no path (or "/"),
// query or fragment, and returns its host:port. http names cleartext
// HTTP/2 (h2c), as gRPC's own URLs do; https is not supported.
func ParseURL(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return "", errors.New("must be http://host:port: cleartext HTTP/2, without a path")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil || host == "" {
		return "", errors.New("must be http://host:port, with the port")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", errors.New("must be http://host:port, with a port from 1 to 65535")
	}
	return u.Host, nil
}

// Target is the call's server and method, such as
// grpc://127.0.0.1:50051/vllm.grpc.engine.VllmEngine/Generate.
func (s *Sender) Target() string { return s.target }

// Close closes the connection; calls in flight fail.
func (s *Sender) Close() error { return s.conn.Close() }

// Send makes one Generate call for req and reads its stream to the end.
func (s *Sender) Send(ctx context.Context, req loadgen.Request) loadgen.Answer {
	var answered atomic.Bool
	ctx, cancel := context.WithCancel(context.WithValue(ctx, answeredKey{}, &answered))
	// Cancelling ends the stream on every path out, early ones included.
	defer cancel()
	a := loadgen.Answer{Start: time.Now()}
	var trailer metadata.MD
	stream, err := s.client.Generate(ctx, s.request(req), grpc.Trailer(&trailer))
	if err != nil {
		return failed(ctx, a, err, answered.Load(), false)
	}
	streamed, complete, received := false, false, false
	for {
		m, err := stream.Recv()
		t := time.Now()
		if errors.Is(err, io.EOF) {
			a.Status, a.Success = CodeName(codes.OK), true
			if !complete {
				a.Err = fmt.Errorf("%w: the Generate stream ended without a complete message", loadgen.ErrBadResponse)
			}
			return a
		}
		if err != nil {
			a = failed(ctx, a, err, answered.Load(), received)
			if v := trailer.Get(RetryAfterKey); a.Status != "" && len(v) > 0 {
				a.RetryAfter = v[0]
			}
			return a
		}
		received = true
		if c := m.GetChunk(); c != nil && len(c.GetTokenIds()) > 0 {
			a.Reply.Content(t)
			streamed = true
		}
		if c := m.GetComplete(); c != nil {
			// Without stream, or with only this message, the complete
			// message is the answer's content; after chunks it repeats
			// their tokens.
			if !streamed && len(c.GetOutputIds()) > 0 {
				a.Reply.Content(t)
			}
			a.Reply.Usage(int(c.GetPromptTokens()), int(c.GetCompletionTokens()))
			a.Reply.End(t)
			complete = true
		}
	}
}

// request is req as a GenerateRequest with a request id of its own.
func (s *Sender) request(req loadgen.Request) *enginepb.GenerateRequest {
	maxTokens := uint32(req.MaxTokens)
	return &enginepb.GenerateRequest{
		RequestId:      s.idPrefix + strconv.FormatUint(s.next.Add(1), 10),
		Input:          &enginepb.GenerateRequest_Text{Text: req.Prompt},
		SamplingParams: &enginepb.SamplingParams{MaxTokens: &maxTokens, IgnoreEos: true},
		Stream:         req.Stream,
	}
}

// failed fills in a for a call that ended with err: the server's status
// when the server sent one, and no status (err alone) when it sent none,
// or when its CANCELLED or DEADLINE_EXCEEDED came as ctx, the call's own
// context, ended. A call that failed UNAVAILABLE with no status from the
// server and no message received (received) failed on its connection,
// before any answer: its error wraps loadgen.ErrUnanswered, so that it may
// be tried again.
func failed(ctx context.Context, a loadgen.Answer, err error, answered, received bool) loadgen.Answer {
	code := status.Code(err)
	if code == codes.DeadlineExceeded {
		// The server's deadline is ctx's, sent as grpc-timeout rounded up,
		// so its DEADLINE_EXCEEDED (or its RST_STREAM, which grpc-go reads
		// as one) comes once ctx's deadline has passed, but it may come
		// before ctx's timer has ended ctx: wait for that, so that the
		// caller sees why the call ended.
		if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			<-ctx.Done()
		}
	}
	own := ctx.Err() != nil && (code == codes.Canceled || code == codes.DeadlineExceeded)
	if !answered || own {
		a.Err = err
		if !own && !received && code == codes.Unavailable {
			a.Err = fmt.Errorf("%w: %w", loadgen.ErrUnanswered, err)
		}
		return a
	}
	a.Status = CodeName(code)
	return a
}

// answeredKey keys the *atomic.Bool, in a call's context, that trailerWatch
// sets when the server's status arrives.
type answeredKey struct{}
