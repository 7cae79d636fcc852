package busy_test

import (
	"math"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load/busy"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		th   busy.Thresholds
		// wantErr lists what the error must contain; nil means no error.
		wantErr []string
	}{
		{name: "all unset", th: busy.Thresholds{}},
		{name: "decode 0", th: decodeOnly(0)},
		{name: "decode 1", th: decodeOnly(1)},
		{name: "decode 0.8", th: decodeOnly(0.8)},
		{name: "tokens max", th: busy.Thresholds{ActivePrefillTokens: new(uint64(math.MaxUint64))}},
		{name: "frac 0", th: busy.Thresholds{ActivePrefillTokensFrac: new(0.0)}},
		{name: "frac large", th: busy.Thresholds{ActivePrefillTokensFrac: new(1e300)}},
		{name: "decode above 1", th: decodeOnly(1.5),
			wantErr: []string{"active_decode_blocks_threshold", "1.5"}},
		{name: "decode negative", th: decodeOnly(-0.1),
			wantErr: []string{"active_decode_blocks_threshold", "-0.1"}},
		{name: "decode NaN", th: decodeOnly(math.NaN()),
			wantErr: []string{"active_decode_blocks_threshold", "NaN"}},
		{name: "decode +Inf", th: decodeOnly(math.Inf(1)),
			wantErr: []string{"active_decode_blocks_threshold", "+Inf"}},
		{name: "frac negative", th: busy.Thresholds{ActivePrefillTokensFrac: new(-1.0)},
			wantErr: []string{"active_prefill_tokens_threshold_frac", "-1"}},
		{name: "frac NaN", th: busy.Thresholds{ActivePrefillTokensFrac: new(math.NaN())},
			wantErr: []string{"active_prefill_tokens_threshold_frac", "NaN"}},
		{name: "frac +Inf", th: busy.Thresholds{ActivePrefillTokensFrac: new(math.Inf(1))},
			wantErr: []string{"active_prefill_tokens_threshold_frac", "+Inf"}},
		{name: "every problem reported",
			th:      busy.Thresholds{ActiveDecodeBlocks: new(2.0), ActivePrefillTokensFrac: new(-3.0)},
			wantErr: []string{"active_decode_blocks_threshold", "got 2", "active_prefill_tokens_threshold_frac", "got -3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.th.Validate()
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Validate() = %q, want it to contain %q", err, s)
				}
			}
		})
	}
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		th   busy.Thresholds
		want bool
	}{
		{name: "none", th: busy.Thresholds{}, want: false},
		{name: "decode", th: decodeOnly(0), want: true},
		{name: "tokens", th: busy.Thresholds{ActivePrefillTokens: new(uint64(0))}, want: true},
		{name: "frac", th: busy.Thresholds{ActivePrefillTokensFrac: new(0.0)}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.th.Enabled(); got != tc.want {
				t.Errorf("Enabled() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		name string
		th   busy.Thresholds
		want string
	}{
		{name: "none", th: busy.Thresholds{},
			want: "active_decode_blocks_threshold=none active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=none"},
		{name: "all", th: busy.Thresholds{ActiveDecodeBlocks: new(0.8), ActivePrefillTokens: new(uint64(10000)), ActivePrefillTokensFrac: new(1.5)},
			want: "active_decode_blocks_threshold=0.8 active_prefill_tokens_threshold=10000 active_prefill_tokens_threshold_frac=1.5"},
		{name: "large frac", th: busy.Thresholds{ActivePrefillTokensFrac: new(1e7)},
			want: "active_decode_blocks_threshold=none active_prefill_tokens_threshold=none active_prefill_tokens_threshold_frac=1e+07"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.th.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}
