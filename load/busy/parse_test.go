package busy_test

import (
	"math"
	"strings"
	"testing"

	"github.com/slotgate/slotgate/load/busy"
)

// floatParseCase is one input for ParseFraction or ParseFrac. want is
// meaningful when unset and wantErr are false.
type floatParseCase struct {
	in      string
	want    float64
	unset   bool
	wantErr bool
}

func TestParseFraction(t *testing.T) {
	testFloatParser(t, busy.ParseFraction, []floatParseCase{
		{in: "", unset: true},
		{in: "None", unset: true},
		{in: "none", unset: true},
		{in: "  None ", unset: true},
		{in: "0", want: 0},
		{in: "-0", want: 0},
		{in: "1", want: 1},
		{in: "0.8", want: 0.8},
		{in: " 0.25\n", want: 0.25},
		{in: "1e-3", want: 0.001},
		{in: "NONE", wantErr: true},
		{in: "null", wantErr: true},
		{in: "1.0001", wantErr: true},
		{in: "-0.1", wantErr: true},
		{in: "NaN", wantErr: true},
		{in: "Inf", wantErr: true},
		{in: "0.5x", wantErr: true},
		{in: "1e400", wantErr: true},
	})
}

func TestParseFrac(t *testing.T) {
	testFloatParser(t, busy.ParseFrac, []floatParseCase{
		{in: "", unset: true},
		{in: "None", unset: true},
		{in: "none", unset: true},
		{in: "0", want: 0},
		{in: "-0", want: 0},
		{in: "64", want: 64},
		{in: "1.5", want: 1.5},
		{in: "1e300", want: 1e300},
		{in: "-1", wantErr: true},
		{in: "NaN", wantErr: true},
		{in: "+Inf", wantErr: true},
		{in: "1e400", wantErr: true},
		{in: "x", wantErr: true},
	})
}

func testFloatParser(t *testing.T, parse func(string) (*float64, error), cases []floatParseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parse(tc.in)
			switch {
			case tc.wantErr:
				if err == nil {
					t.Fatalf("parse(%q) = %v, nil; want an error", tc.in, fmtPtr(got))
				}
				if !strings.Contains(err.Error(), strings.TrimSpace(tc.in)) {
					t.Errorf("error %q does not quote the input", err)
				}
			case err != nil:
				t.Fatalf("parse(%q): %v", tc.in, err)
			case tc.unset:
				if got != nil {
					t.Errorf("parse(%q) = %v, want nil", tc.in, *got)
				}
			case got == nil:
				t.Fatalf("parse(%q) = nil, want %v", tc.in, tc.want)
			case *got != tc.want || math.Signbit(*got):
				t.Errorf("parse(%q) = %v, want %v", tc.in, *got, tc.want)
			}
		})
	}
}

func fmtPtr[T any](p *T) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func TestParseTokens(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    *uint64
		wantErr bool
	}{
		{in: ""},
		{in: "None"},
		{in: "none"},
		{in: "0", want: new(uint64(0))},
		{in: " 10000 ", want: new(uint64(10000))},
		{in: "18446744073709551615", want: new(uint64(math.MaxUint64))},
		{in: "18446744073709551616", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "+1", wantErr: true},
		{in: "1.5", wantErr: true},
		{in: "1e3", wantErr: true},
		{in: "0x10", wantErr: true},
		{in: "ten", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := busy.ParseTokens(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseTokens(%q) = %v, nil; want an error", tc.in, fmtPtr(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTokens(%q): %v", tc.in, err)
			}
			if fmtPtr(got) != fmtPtr(tc.want) {
				t.Errorf("ParseTokens(%q) = %v, want %v", tc.in, fmtPtr(got), fmtPtr(tc.want))
			}
		})
	}
}
