package loadgrpc_test

import (
	"math"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/slotgate/slotgate/load/loadgrpc"
	"github.com/slotgate/slotgate/load/report"
	loadv1 "github.com/slotgate/slotgate/protos/slotgate/load/v1"
)

// TestFieldNumbers pins the numbers of the fields added for issue 19: a
// field is never renumbered, or old readers would read garbage.
func TestFieldNumbers(t *testing.T) {
	for _, tt := range []struct {
		msg  protoreflect.Message
		name string
		num  protoreflect.FieldNumber
	}{
		{(&loadv1.Load{}).ProtoReflect(), "epoch", 9},
		{(&loadv1.Load{}).ProtoReflect(), "ttl", 10},
		{(&loadv1.Requests{}).ProtoReflect(), "prefill_tokens", 8},
		{(&loadv1.Requests{}).ProtoReflect(), "queued_tokens", 9},
		{(&loadv1.Requests{}).ProtoReflect(), "prefill_token_limit", 10},
		{(&loadv1.Requests{}).ProtoReflect(), "queue_token_limit", 11},
		{(&loadv1.RankRequests{}).ProtoReflect(), "prefill_tokens", 8},
		{(&loadv1.RankRequests{}).ProtoReflect(), "queued_tokens", 9},
		{(&loadv1.RankRequests{}).ProtoReflect(), "prefill_token_limit", 10},
		{(&loadv1.RankRequests{}).ProtoReflect(), "queue_token_limit", 11},
	} {
		fd := tt.msg.Descriptor().Fields().ByName(protoreflect.Name(tt.name))
		if fd == nil || fd.Number() != tt.num {
			t.Errorf("%s.%s: %v, want field number %d", tt.msg.Descriptor().FullName(), tt.name, fd, tt.num)
		}
	}
}

// TestTTLOnTheWire: no TTL is an unset ttl, a TTL travels to the
// nanosecond, and a ttl that no slotgate sends is read without wrapping
// around: a negative one as none, a huge one as the longest.
func TestTTLOnTheWire(t *testing.T) {
	if l := loadgrpc.ToProto(&report.Snapshot{}); l.Ttl != nil {
		t.Errorf("TTL 0 sent as %v, want unset", l.Ttl)
	}
	s := report.Snapshot{Epoch: math.MaxUint64, TTL: 3*time.Second + 1}
	if got := wire(t, &s); got.TTL != s.TTL || got.Epoch != s.Epoch {
		t.Errorf("read back epoch %d, TTL %v; want %d, %v", got.Epoch, got.TTL, s.Epoch, s.TTL)
	}
	for _, tt := range []struct {
		name string
		ttl  *durationpb.Duration
		want time.Duration
	}{
		{"unset", nil, 0},
		{"negative", durationpb.New(-time.Second), 0},
		{"longer than a Duration", &durationpb.Duration{Seconds: math.MaxInt64}, time.Duration(math.MaxInt64)},
		{"one millisecond", durationpb.New(time.Millisecond), time.Millisecond},
	} {
		if got := loadgrpc.FromProto(&loadv1.Load{Ttl: tt.ttl}).TTL; got != tt.want {
			t.Errorf("%s: TTL %v, want %v", tt.name, got, tt.want)
		}
	}
}
