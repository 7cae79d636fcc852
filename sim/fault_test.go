package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestFaultSetValidate(t *testing.T) {
	tests := []struct {
		name string
		set  FaultSet
		want []string // the problems, in order; none for a valid set
	}{
		{"zero", FaultSet{}, nil},
		{"defaults", DefaultFaultSet(), nil},
		{"every rate at 1", FaultSet{ResetRate: 1, ErrorRate: 1, StallRate: 1, SlowFirstTokenRate: 1, NeverEndRate: 1}, nil},
		{"rate above 1", FaultSet{ErrorRate: 1.5}, []string{"error_rate: must be a number from 0 through 1, got 1.5"}},
		{"negative rate", FaultSet{NeverEndRate: -0.1}, []string{"never_end_rate: must be a number from 0 through 1, got -0.1"}},
		{"NaN rate", FaultSet{ResetRate: math.NaN()}, []string{"reset_rate: must be a number from 0 through 1, got NaN"}},
		{"negative pauses", FaultSet{Stall: -time.Second, SlowFirstToken: -time.Millisecond}, []string{
			"stall: must not be negative, got -1s", "slow_first_token: must not be negative, got -1ms",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.set.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if want := strings.Join(tt.want, "\n"); got != want {
				t.Fatalf("Validate: %q, want %q", got, want)
			}
			if _, err := NewFaults(tt.set, 1); (err != nil) != (tt.want != nil) {
				t.Fatalf("NewFaults: %v", err)
			}
		})
	}
}

// drawN draws n faults and counts them by kind ("" for none).
func drawN(f *Faults, n int) (seq []Fault, counts map[Fault]int) {
	counts = map[Fault]int{}
	for range n {
		k, _ := f.draw()
		seq = append(seq, k)
		counts[k]++
	}
	return seq, counts
}

func mustFaults(t *testing.T, set FaultSet, seed uint64) *Faults {
	t.Helper()
	f, err := NewFaults(set, seed)
	if err != nil {
		t.Fatalf("NewFaults: %v", err)
	}
	return f
}

// The draws depend only on the seed and the order of requests: each fault
// comes with its rate, never more than one per request, and a rate of 0
// never comes. With rates summing above 1, the later faults get what is
// left in FaultKinds order.
func TestFaultDraw(t *testing.T) {
	const n = 100000
	tests := []struct {
		name string
		set  FaultSet
		want map[Fault]float64 // expected share of each kind, "" for none
	}{
		{"none", FaultSet{}, map[Fault]float64{"": 1}},
		{"every kind", FaultSet{ResetRate: 0.1, ErrorRate: 0.2, StallRate: 0.05, SlowFirstTokenRate: 0.15, NeverEndRate: 0.1},
			map[Fault]float64{FaultReset: 0.1, FaultError: 0.2, FaultStall: 0.05, FaultSlowFirstToken: 0.15, FaultNeverEnd: 0.1, "": 0.4}},
		{"always reset", FaultSet{ResetRate: 1, ErrorRate: 1}, map[Fault]float64{FaultReset: 1}},
		{"sum above 1", FaultSet{ErrorRate: 0.7, NeverEndRate: 0.7}, map[Fault]float64{FaultError: 0.7, FaultNeverEnd: 0.3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq1, counts := drawN(mustFaults(t, tt.set, 42), n)
			for k, c := range counts {
				if _, ok := tt.want[k]; !ok {
					t.Errorf("fault %q drawn %d times, want never", k, c)
				}
			}
			for k, share := range tt.want {
				if got := float64(counts[k]) / n; math.Abs(got-share) > 0.01 {
					t.Errorf("fault %q drawn by %.4f of requests, want %.2f", k, got, share)
				}
			}
			seq2, _ := drawN(mustFaults(t, tt.set, 42), n)
			if strings.Join(faultStrings(seq1), ",") != strings.Join(faultStrings(seq2), ",") {
				t.Error("the same seed drew different faults")
			}
			if len(tt.want) > 1 {
				seq3, _ := drawN(mustFaults(t, tt.set, 43), n)
				if strings.Join(faultStrings(seq1), ",") == strings.Join(faultStrings(seq3), ",") {
					t.Error("seeds 42 and 43 drew the same faults")
				}
			}
		})
	}
}

// Replacing the set changes the faults of later requests, not the draws:
// the sequence goes on as it would have.
func TestFaultReplace(t *testing.T) {
	set := FaultSet{ErrorRate: 0.5}
	want, _ := drawN(mustFaults(t, set, 7), 20)
	f := mustFaults(t, FaultSet{}, 7)
	got, _ := drawN(f, 10)
	if err := f.Replace(FaultSet{ErrorRate: 2}); err == nil {
		t.Fatal("Replace accepted a rate of 2")
	}
	if err := f.Replace(set); err != nil {
		t.Fatal(err)
	}
	more, _ := drawN(f, 10)
	for i, k := range got {
		if k != "" {
			t.Fatalf("draw %d before the change: %q, want none", i, k)
		}
	}
	if a, b := strings.Join(faultStrings(more), ","), strings.Join(faultStrings(want[10:]), ","); a != b {
		t.Fatalf("draws after the change %s, want %s", a, b)
	}
	if f.Set() != set {
		t.Fatalf("Set() = %+v, want %+v", f.Set(), set)
	}
}

func faultStrings(ks []Fault) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func TestParseFaultSet(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    FaultSet
		wantErr string
	}{
		{"the contract's example",
			`{"reset_rate":0.01,"error_rate":0.01,"stall_rate":0,"stall":"2s","slow_first_token_rate":0,"slow_first_token":"2s","never_end_rate":0}`,
			FaultSet{ResetRate: 0.01, ErrorRate: 0.01, Stall: 2 * time.Second, SlowFirstToken: 2 * time.Second}, ""},
		{"empty object: nothing, default pauses", `{}`, DefaultFaultSet(), ""},
		{"null fields are missing", `{"stall":null,"reset_rate":null}`, DefaultFaultSet(), ""},
		{"some fields", `{"stall_rate":0.5,"stall":"150ms","never_end_rate":1}`,
			FaultSet{StallRate: 0.5, Stall: 150 * time.Millisecond, SlowFirstToken: 2 * time.Second, NeverEndRate: 1}, ""},
		{"zero pause", `{"slow_first_token":"0s"}`, FaultSet{Stall: 2 * time.Second}, ""},
		{"rate above 1", `{"error_rate":1.5}`, FaultSet{}, "error_rate: must be a number from 0 through 1, got 1.5"},
		{"rate as a string", `{"reset_rate":"0.1"}`, FaultSet{}, `reset_rate: must be a number from 0 through 1, got "0.1"`},
		{"duration as a number", `{"stall":2}`, FaultSet{}, `stall: must be a non-negative duration string such as "2s" or "500ms", got 2`},
		{"bad duration", `{"slow_first_token":"soon"}`, FaultSet{},
			`slow_first_token: must be a non-negative duration string such as "2s" or "500ms", got "soon"`},
		{"negative duration", `{"stall":"-1s"}`, FaultSet{}, `stall: must be a non-negative duration string such as "2s" or "500ms", got "-1s"`},
		{"unknown field", `{"reset":0.1}`, FaultSet{}, "reset: unknown field, got 0.1"},
		{"every problem", `{"zzz":1,"never_end_rate":-1,"stall":"x"}`, FaultSet{},
			"stall: must be a non-negative duration string such as \"2s\" or \"500ms\", got \"x\"\n" +
				"never_end_rate: must be a number from 0 through 1, got -1\nzzz: unknown field, got 1"},
		{"not an object", `[1]`, FaultSet{}, `the body must be a JSON object such as {"reset_rate":0.01,"stall":"2s"}, got "[1]"`},
		{"null", `null`, FaultSet{}, `the body must be a JSON object such as {"reset_rate":0.01,"stall":"2s"}, got "null"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFaultSet([]byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			if back, err := ParseFaultSet(mustMarshal(t, toJSON(got))); err != nil || back != got {
				t.Fatalf("the JSON of %+v reads back as %+v, %v", got, back, err)
			}
		})
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
