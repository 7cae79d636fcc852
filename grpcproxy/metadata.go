package grpcproxy

import (
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/slotgate/slotgate/gate"
)

// The metadata keys slotgate reads or sets, lower-case as gRPC has them.
const (
	// RequestIDKey carries the call's id to the engine, as HTTP's
	// X-Request-Id: the client's own when it sent a usable one.
	RequestIDKey = "x-request-id"
	// RankKey pins a call to a data-parallel rank, as HTTP's
	// X-Data-Parallel-Rank; with limits per rank, a call that names none
	// is given the rank the gate chose.
	RankKey = "x-data-parallel-rank"
	// RetryAfterKey is the trailer of overload and draining refusals.
	RetryAfterKey = "retry-after"
	// ReasonKey is a machine-readable reason on every refusal of
	// slotgate's own, as HTTP's X-Slotgate-Reason.
	ReasonKey = "x-slotgate-reason"
)

// hopKeys are the keys never copied from one side of the proxy to the
// other: HTTP/2's hop-by-hop headers and what the gRPC transport writes
// itself for each hop (framing, compression, deadline, status), which it
// would otherwise send twice or contradict. Pseudo-headers (":authority")
// are dropped too. The status travels as the handler's error, which
// carries its details (grpc-status-details-bin).
var hopKeys = map[string]bool{
	"content-type": true, "user-agent": true, "te": true, "host": true,
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true, "upgrade": true,
	"grpc-timeout": true, "grpc-encoding": true, "grpc-accept-encoding": true, "grpc-message-type": true,
	"grpc-status": true, "grpc-message": true, "grpc-status-details-bin": true, "grpc-previous-rpc-attempts": true,
}

// endToEnd returns the keys of md that pass the proxy; nil when none.
func endToEnd(md metadata.MD) metadata.MD {
	var out metadata.MD
	for k, v := range md {
		if hopKeys[k] || strings.HasPrefix(k, ":") {
			continue
		}
		if out == nil {
			out = make(metadata.MD, len(md))
		}
		out[k] = v
	}
	return out
}

// first returns the first value of key in md, "" when there is none.
func first(md metadata.MD, key string) string {
	if v := md[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// rankOf reads RankKey: the rank, and whether one is named. A value that
// is not a rank (not a whole number of at least 0) names none, as over
// HTTP.
func rankOf(md metadata.MD) (int, bool) {
	v := first(md, RankKey)
	if v == "" {
		return gate.Unpinned, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return gate.Unpinned, false
	}
	return n, true
}

// contentSubtype is the subtype of a gRPC content-type
// ("application/grpc+json" → "json"), "" when it names none.
func contentSubtype(md metadata.MD) string {
	rest, ok := strings.CutPrefix(first(md, "content-type"), "application/grpc")
	if !ok || !strings.HasPrefix(rest, "+") {
		return ""
	}
	sub, _, _ := strings.Cut(rest[1:], ";")
	return strings.ToLower(sub)
}
