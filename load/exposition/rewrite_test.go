package exposition_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/slotgate/slotgate/load/exposition"
)

var (
	vllmWaiting   = exposition.Gauge{Family: "vllm:num_requests_waiting", RankLabel: "engine"}
	sglangWaiting = exposition.Gauge{Family: "sglang:num_queue_reqs", RankLabel: "dp_rank"}
	trtWaiting    = exposition.Gauge{Family: exposition.TRTLLMWaiting}
)

const vllmDP2 = `# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
vllm:num_requests_waiting{engine="1",model_name="m"} 1.0
# HELP vllm:num_requests_waiting_by_reason Number of requests waiting, by reason.
# TYPE vllm:num_requests_waiting_by_reason gauge
vllm:num_requests_waiting_by_reason{engine="0",model_name="m",reason="capacity"} 3.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 8.0
vllm:num_requests_running{engine="1",model_name="m"} 8.0
`

func TestAddQueue(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		gauge    exposition.Gauge
		queue    exposition.Queue
		want     string
		wantSame bool // the output is the input, byte for byte
	}{
		{name: "vllm one limiter: the whole queue on the first series", src: vllmDP2, gauge: vllmWaiting,
			queue: exposition.Queue{Total: 4},
			want:  strings.Replace(vllmDP2, `engine="0",model_name="m"} 3.0`, `engine="0",model_name="m"} 7`, 1)},
		{name: "vllm per rank: each rank's queue on its series", src: vllmDP2, gauge: vllmWaiting,
			queue: exposition.Queue{ByRank: []int64{2, 5}},
			want: strings.NewReplacer(`engine="0",model_name="m"} 3.0`, `engine="0",model_name="m"} 5`,
				`engine="1",model_name="m"} 1.0`, `engine="1",model_name="m"} 6`).Replace(vllmDP2)},
		{name: "per rank: a rank without a series goes to the first", src: vllmDP2, gauge: vllmWaiting,
			queue: exposition.Queue{ByRank: []int64{1, 0, 7}},
			want:  strings.Replace(vllmDP2, `engine="0",model_name="m"} 3.0`, `engine="0",model_name="m"} 11`, 1)},
		{name: "nothing queued: unchanged", src: vllmDP2, gauge: vllmWaiting, queue: exposition.Queue{}, wantSame: true},
		{name: "label order: rank label last", gauge: vllmWaiting, queue: exposition.Queue{ByRank: []int64{0, 3}},
			src:  "vllm:num_requests_waiting{model_name=\"m\",engine=\"1\"} 2\nvllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 0\n",
			want: "vllm:num_requests_waiting{model_name=\"m\",engine=\"1\"} 5\nvllm:num_requests_waiting{model_name=\"m\",engine=\"0\"} 0\n"},
		{name: "series without labels", gauge: sglangWaiting, queue: exposition.Queue{Total: 2},
			src: "sglang:num_queue_reqs 4\n", want: "sglang:num_queue_reqs 6\n"},
		{name: "no rank label is rank 0", gauge: sglangWaiting, queue: exposition.Queue{ByRank: []int64{2}},
			src:  "sglang:num_queue_reqs{model_name=\"m\",tp_rank=\"0\"} 1.0\n",
			want: "sglang:num_queue_reqs{model_name=\"m\",tp_rank=\"0\"} 3\n"},
		{name: "exponent form", gauge: sglangWaiting, queue: exposition.Queue{Total: 1},
			src: "sglang:num_queue_reqs{dp_rank=\"0\"} 1.5e1\n", want: "sglang:num_queue_reqs{dp_rank=\"0\"} 16\n"},
		{name: "timestamp and blanks kept", gauge: trtWaiting, queue: exposition.Queue{Total: 1},
			src: "trtllm_num_requests_waiting \t 0 1700000000000\n", want: "trtllm_num_requests_waiting \t 1 1700000000000\n"},
		{name: "+Inf left alone", gauge: trtWaiting, queue: exposition.Queue{Total: 1},
			src: "trtllm_num_requests_waiting +Inf\n", wantSame: true},
		{name: "NaN left alone", gauge: trtWaiting, queue: exposition.Queue{Total: 1},
			src: "trtllm_num_requests_waiting NaN\n", wantSame: true},
		{name: "escaped quote and brace in a label value", gauge: vllmWaiting, queue: exposition.Queue{Total: 1},
			src:  "vllm:num_requests_waiting{model_name=\"a\\\"}b\",engine=\"0\"} 0\n",
			want: "vllm:num_requests_waiting{model_name=\"a\\\"}b\",engine=\"0\"} 1\n"},
		{name: "no final newline", gauge: trtWaiting, queue: exposition.Queue{Total: 2},
			src: "trtllm_num_requests_waiting 1", want: "trtllm_num_requests_waiting 3"},
		{name: "family absent: a series of its own", gauge: sglangWaiting, queue: exposition.Queue{Total: 3},
			src: "sglang:num_running_reqs 1\n", want: "sglang:num_running_reqs 1\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs 3\n"},
		{name: "prefix is not the family", gauge: vllmWaiting, queue: exposition.Queue{Total: 1},
			src:  "vllm:num_requests_waiting_by_reason{reason=\"capacity\"} 2\n",
			want: "vllm:num_requests_waiting_by_reason{reason=\"capacity\"} 2\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(exposition.AddQueue(nil, []byte(tt.src), tt.gauge, tt.queue))
			want := tt.want
			if tt.wantSame {
				want = tt.src
			}
			if got != want {
				t.Errorf("AddQueue =\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// TestAddQueueParsesAsThePickerDoes: the output of a real-looking scrape
// parses with expfmt's legacy validation, and the family's first series,
// the one the picker reads, carries the queue.
func TestAddQueueParsesAsThePickerDoes(t *testing.T) {
	out := exposition.AddQueue(nil, []byte(vllmDP2), vllmWaiting, exposition.Queue{Total: 4})
	fams := parseLegacy(t, out)
	first := fams["vllm:num_requests_waiting"].GetMetric()[0]
	if got := first.GetGauge().GetValue(); got != 7 {
		t.Errorf("first series = %v, want 3 + 4", got)
	}
	if got := fams["vllm:num_requests_waiting_by_reason"].GetMetric()[0].GetGauge().GetValue(); got != 3 {
		t.Errorf("_by_reason = %v, want it unchanged", got)
	}
}

func parseLegacy(t testing.TB, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return fams
}

// familySum adds the family's finite gauge values.
func familySum(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	var s float64
	for _, m := range fams[name].GetMetric() {
		v := m.GetGauge().GetValue()
		if m.GetGauge() == nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		s += v
	}
	return s, true
}

func FuzzAddQueue(f *testing.F) {
	f.Add([]byte(vllmDP2), "vllm:num_requests_waiting", "engine", int64(3), int64(2))
	f.Add([]byte("sglang:num_queue_reqs{dp_rank=\"1\"} 1e3\n"), "sglang:num_queue_reqs", "dp_rank", int64(0), int64(9))
	f.Add([]byte("x{a=\"\\\\\",b=\"}\"} NaN 12\n# HELP x y\n"), "x", "a", int64(1), int64(-1))
	f.Fuzz(func(t *testing.T, src []byte, family, label string, q0, q1 int64) {
		q0, q1 = q0&0xffff, q1&0xffff // queues are small, and their sums exact in float64
		g := exposition.Gauge{Family: family, RankLabel: label}
		for _, q := range []exposition.Queue{{Total: q0}, {ByRank: []int64{q0, q1}}} {
			in := bytes.Clone(src)
			out := exposition.AddQueue(nil, in, g, q)
			if !bytes.Equal(in, src) {
				t.Fatal("AddQueue modified its input")
			}
			checkSum(t, src, out, family, q.Sum())
		}
	})
}

// checkSum: when src is a valid exposition whose family (the name valid
// and present, every value finite) sums to s, out is valid and sums to
// s + queue.
func checkSum(t *testing.T, src, out []byte, family string, queue int64) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(src))
	if err != nil || fams[family] == nil || fams[family].GetType() != dto.MetricType_GAUGE || !model.LegacyValidation.IsValidMetricName(family) {
		return
	}
	before, ok := familySum(fams, family)
	if !ok || math.Abs(before) > 1<<40 || bytes.Contains(src, []byte("\r")) {
		return
	}
	after, ok := familySum(parseLegacy(t, out), family)
	if !ok || after != before+float64(queue) {
		t.Fatalf("family sum %v -> %v, want + %d\nin:\n%s\nout:\n%s", before, after, queue, src, out)
	}
}
