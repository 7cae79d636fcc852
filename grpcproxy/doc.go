// Package grpcproxy is slotgate's gRPC adapter over the gate: a
// transparent proxy that forwards any service and method to the engine's
// gRPC server (vLLM's vllm.grpc.engine.VllmEngine, SGLang, TensorRT-LLM,
// Triton's KServe v2) without knowing its protos, once the gate admitted
// the call. The gate is the HTTP proxy's own, so a gRPC call and an HTTP
// request take their engine slots from the same N, W and Q.
//
// The caller builds the server with grpc.NewServer(p.ServerOptions()...)
// and may register its own services on it (grpc.health.v1, reflection, the
// load report): those are served by the server itself, everything else
// goes through the proxy. It dials the engine with DialOptions(), whose
// flow-control windows match the server's.
//
// One call's life, in handle (handler.go) and forward (forward.go):
//
//	Admit    the gate: draining, busy, the rank's limiter, the classifier,
//	         the limiter (at once or queued); refused → a status, done
//	forward  BeginFlight; the engine call opened (Sent); the client's
//	         messages pumped to it; the engine's header (Responding), its
//	         first message (Prefilled: it counts as the first token), every
//	         message, its trailers and its status relayed back
//	Finish   the flight ends, the slot is released, the call is reported
//
// Invariants:
//
//   - One admission per call, before anything of it reaches the engine: a
//     refused call never opens an engine stream, and a call cancelled
//     while it waited in the queue is never forwarded (cancelled_queued).
//   - The slot is released exactly once on every path, a panic included
//     (Finish is deferred; a panic becomes an INTERNAL status).
//   - Transparent: message bytes pass through untouched (never decoded),
//     the metadata both ways less the hop's own keys (pseudo-headers,
//     content-type, user-agent, grpc-timeout, grpc-encoding and the
//     like), the engine's header before its first message (and when it
//     fails before any), its trailers, and its status unchanged. The
//     client's deadline and cancellation reach the engine through the
//     engine call's context.
//   - slotgate's own answers (refusals, an unreachable engine) are a
//     status with trailers only: the reason (x-slotgate-reason), the
//     call's id and, on overload and draining, retry-after.
//   - A forwarded call's trailers are the engine's, with those of the
//     Options.Trailer hook (a per-call load report) replacing any of the
//     same key; a refused call never carries the hook's.
//   - Every goroutine has an owner: a call's one pump goroutine (client to
//     engine) ends with the call.
package grpcproxy
