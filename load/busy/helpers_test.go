package busy_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/slotgate/slotgate/load"
	"github.com/slotgate/slotgate/load/busy"
)

// known and unknown build values. The rule reads a value whatever its
// source; known ones are the engine's, own ones slotgate's.
func known(n int64) load.Value { return load.Value{N: n, Source: load.SourceEngine} }

// own is a value of slotgate's own count.
func own(n int64) load.Value { return load.Value{N: n, Source: load.SourceSlotgate} }

var unknown = load.Value{}

// decodeOnly is Thresholds with only the decode check.
func decodeOnly(f float64) busy.Thresholds { return busy.Thresholds{ActiveDecodeBlocks: new(f)} }

// jsonEqual fails t unless got and want hold the same JSON value.
func jsonEqual(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("body = %s, want %s", got, want)
	}
}
