package eventplane

import (
	"fmt"
	"strings"
)

// Topic is the event topic of worker load, Dynamo's KV_METRICS_SUBJECT
// (lib/llm/src/kv_router.rs). Subscribers drop envelopes whose topic
// field is not theirs.
const Topic = "kv_metrics"

// Endpoint names a Dynamo endpoint: dyn://namespace.component.endpoint.
type Endpoint struct {
	Namespace, Component, Name string
}

// ParseEndpoint reads dyn://namespace.component.endpoint (the dyn://
// prefix is optional), as Dynamo workers' --endpoint is written. Each part
// must be non-empty; the endpoint's name may not contain a dot either,
// since the dots separate the parts.
func ParseEndpoint(s string) (Endpoint, error) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "dyn://"), ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q: want dyn://namespace.component.endpoint, three non-empty names", s)
	}
	return Endpoint{Namespace: parts[0], Component: parts[1], Name: parts[2]}, nil
}

// Subject is the NATS subject Dynamo's frontend subscribes to for the
// endpoint's load: EventScope::Endpoint's subject for the kv_metrics topic
// (lib/runtime/src/discovery/mod.rs).
func (e Endpoint) Subject() string {
	return "namespace." + encodeSegment(e.Namespace) + ".component." + encodeSegment(e.Component) +
		".endpoint." + encodeSegment(e.Name) + "." + encodeSegment(Topic)
}

// encodeSegment is Dynamo's encode_event_segment: ASCII letters, digits,
// '-' and '_' stay; every other byte becomes %XX in upper-case hex, so
// that no name can add a subject token or a NATS wildcard.
func encodeSegment(s string) string {
	var b strings.Builder
	for i := range len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// ActiveLoad is the worker-owned part of Dynamo's ActiveLoad
// (lib/kv-router/src/protocols.rs) for one rank.
type ActiveLoad struct {
	WorkerID     uint64
	DPRank       uint32
	KVUsedBlocks uint64
}

// Append appends the load as rmp_serde's to_vec_named writes Dynamo's
// struct with the router-owned options left out: a map of worker_id,
// dp_rank and kv_used_blocks, in the struct's order. A missing Option
// field reads as None on Dynamo's side, as a nil would.
func (a ActiveLoad) Append(b []byte) []byte {
	b = appendMapHeader(b, 3)
	b = appendUint(appendStr(b, "worker_id"), a.WorkerID)
	b = appendUint(appendStr(b, "dp_rank"), uint64(a.DPRank))
	return appendUint(appendStr(b, "kv_used_blocks"), a.KVUsedBlocks)
}

// Envelope is Dynamo's EventEnvelope (lib/runtime/src/transports/
// event_plane), around an encoded payload.
type Envelope struct {
	PublisherID uint64
	Sequence    uint64
	// PublishedAt is milliseconds since the Unix epoch.
	PublishedAt uint64
	Topic       string
	Payload     []byte
}

// Append appends the envelope as Dynamo's MsgpackCodec encodes it
// (rmp_serde::to_vec_named of BorrowedEventEnvelope): a map of
// publisher_id, sequence, published_at, topic and payload, the payload as
// bin. Over NATS these bytes are the whole message: the 5-byte frame
// header of frame.rs is for ZMQ only.
func (e Envelope) Append(b []byte) []byte {
	b = appendMapHeader(b, 5)
	b = appendUint(appendStr(b, "publisher_id"), e.PublisherID)
	b = appendUint(appendStr(b, "sequence"), e.Sequence)
	b = appendUint(appendStr(b, "published_at"), e.PublishedAt)
	b = appendStr(appendStr(b, "topic"), e.Topic)
	return appendBin(appendStr(b, "payload"), e.Payload)
}
