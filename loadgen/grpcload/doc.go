// Package grpcload is slotgate-loadgen's gRPC protocol: a loadgen.Sender
// that sends each request as vLLM's streaming Generate call
// (vllm.grpc.engine.VllmEngine, protos/vllm/grpc/engine), to an engine
// such as enginesim or to slotgate's gRPC proxy. It is a package of its
// own so that loadgen stays the standard library only.
//
// A request is a GenerateRequest with the prompt as text, max_tokens and
// ignore_eos set, stream as asked, and a request_id unique to the Sender.
// Its answer is measured as loadgen measures an HTTP stream:
//
//   - the status is the call's gRPC code name ("OK",
//     "RESOURCE_EXHAUSTED", "UNAVAILABLE", …; see CodeName), whether
//     tokens came before it or not. OK is the only success;
//   - a call the server never answered (connection refused or reset, a
//     message over the size limit) has no status: its outcome is "error",
//     or "timeout" or "cancelled" when its context ended. So is a
//     CANCELLED or DEADLINE_EXCEEDED that comes as the call's own context
//     ends: that is the deadline loadgen set, not the server's refusal;
//   - TTFT is the first chunk with token ids; each later chunk with token
//     ids gives an inter-token gap; the complete message ends the E2E
//     latency and gives the prompt and output token counts. Without
//     stream, the complete message is the whole answer, and its time is
//     the TTFT too. A call that ends OK without a complete message is
//     "bad_response".
//
// For loadgen's retries (Options.Retry), a refusal's "retry-after"
// trailer (RetryAfterKey, as slotgate's gRPC proxy sends it) is the
// Answer's RetryAfter, and a call that failed UNAVAILABLE on its
// connection, with no status from the server and no message, wraps
// loadgen.ErrUnanswered.
//
// Invariants: one grpc.ClientConn (cleartext HTTP/2, every call
// multiplexed on it) from New to Close; Send is safe for concurrent use
// and returns when its call has ended, leaving no goroutine behind; Send
// tries each call once: trying again is loadgen's (and grpc-go's own
// transparent retry of a call that never left the client, which changes
// no answer).
package grpcload
