// Package orcagrpc reports the worker's load (package load/report) to
// load balancers in ORCA's form (Open Request Cost Aggregation, the
// xds.data.orca.v3.OrcaLoadReport message): to gRPC clients out of band,
// as the xds.service.orca.v3.OpenRcaService that a gRPC client's
// weighted_round_robin balancer opens on every backend it balances, and
// per call, as the endpoint-load-metrics-bin trailer (gRFC A51); and to
// Envoy and other HTTP balancers as the endpoint-load-metrics header, in
// its TEXT, JSON or BIN form (Header). Its name says where it began: the
// proto and grpc-go's types are the report's one shape, which the HTTP
// forms render.
//
// It follows grpc-go's orca package, the recorder apart from the
// service:
//
//   - A Reporter is fed every published snapshot (Update, from the Hub's
//     OnPublish) and keeps the latest report ready, in each form a reader
//     wants: the proto (Report), grpc-go's orca.ServerMetrics
//     (ServerMetrics, so a Reporter is an orca.ServerMetricsProvider), the
//     trailer (Trailer) and the HTTP header in each Format (Header).
//     Metrics is the mapping itself.
//   - A Service is the OpenRcaService over a Reporter, registered on the
//     gRPC proxy's own server, so that it answers on the address of the
//     calls it balances. It is slotgate's own rather than grpc-go's
//     orca.Service, which raises every reporting interval to at least
//     30 s: a balancer asking for reports every 200 ms would then weigh
//     its backends on load half a minute old. Service honours down to
//     MinReportingInterval (100 ms).
//
// The report:
//
//	application_utilization   the KV cache usage; when no rank knows its
//	                          KV capacity, the engine slots in use,
//	                          in_flight/N; absent when neither is known
//	rps_fractional            requests admitted per second, HTTP and gRPC
//	                          together (the gate's admissions), over the
//	                          last RateWindow to 2×RateWindow
//	named_metrics             kv_cache_usage and active_decode_blocks
//	                          (when known), active_prefill_tokens,
//	                          in_flight, queued, prefilling, busy (0 or 1);
//	                          prefill_tokens and queued_tokens while a
//	                          token limit is in force
//
// Invariants, each checked by the tests:
//
//   - HTTP and gRPC agree: the three forms of the HTTP header are the
//     same report as the trailer and the service's, rendered from it in
//     the same Update: each parses, by Envoy's rules, into the same
//     OrcaLoadReport (a fuzz target checks it for any snapshot).
//   - Every form parses in every Envoy that reads it: TEXT is name=value
//     pairs joined by ", " (the design document's form; Envoy before 1.33
//     split at ':'), names sorted, no duplicate, only the names Envoy
//     takes; JSON is compact proto3 JSON with the proto's field names;
//     BIN is padded base64.
//   - Unknown is absent, never 0: kv_cache_usage and active_decode_blocks
//     are left out when no rank knows them, and application_utilization
//     and rps_fractional are unset (-1 in orca.ServerMetrics; 0, which a
//     balancer ignores, on the wire, where proto3 has no presence).
//   - Every value is finite and at least 0, as the proto's validation
//     rules require and Envoy checks (Metrics drops any other);
//     application_utilization is at most 1. An idle worker reports
//     application_utilization 0, which weighted round robin skips,
//     keeping the worker's last weight: that weight is an estimate of
//     its capacity (requests per unit of utilization), which idleness
//     does not change, whereas a floor above 0 would give a worker that
//     just admitted a request and holds nothing an unbounded weight.
//   - A stream sends the latest report at once and then one every
//     interval, the client's report_interval raised to the service's
//     minimum. It ends when its client leaves (CANCELED,
//     DEADLINE_EXCEEDED), when a Send fails, or when draining begins
//     (UNAVAILABLE, also the answer to every stream opened after): a
//     balancer holds its stream for as long as its connection, and a
//     graceful stop would otherwise wait for every client to hang up. Its
//     handler leaves no goroutine behind.
//   - Update does the work once per snapshot (the Hub publishes at most
//     one per 10 ms), so that a stream's Send or a call's Trailer only
//     reads what is ready.
package orcagrpc
