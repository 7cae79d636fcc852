package load_test

import (
	"testing"

	"github.com/slotgate/slotgate/load"
)

// TestValue: the zero Value is unknown, a known 0 is not, and each source
// names itself.
func TestValue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		v         load.Value
		wantN     int64
		wantKnown bool
		wantSrc   string
	}{
		{name: "zero is unknown", v: load.Value{}, wantSrc: "unknown"},
		{name: "a number without a source is unknown", v: load.Value{N: 7}, wantN: 7, wantSrc: "unknown"},
		{name: "engine 0 is known", v: load.Value{Source: load.SourceEngine}, wantKnown: true, wantSrc: "engine"},
		{name: "static", v: load.Value{N: 16, Source: load.SourceStatic}, wantN: 16, wantKnown: true, wantSrc: "static"},
		{name: "slotgate", v: load.Value{N: 3, Source: load.SourceSlotgate}, wantN: 3, wantKnown: true, wantSrc: "slotgate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := tc.v.Get()
			if n != tc.wantN || ok != tc.wantKnown || tc.v.Known() != tc.wantKnown {
				t.Errorf("Get() = %d, %v; Known() = %v; want %d, %v", n, ok, tc.v.Known(), tc.wantN, tc.wantKnown)
			}
			if got := tc.v.Source.String(); got != tc.wantSrc {
				t.Errorf("Source.String() = %q, want %q", got, tc.wantSrc)
			}
		})
	}
}
