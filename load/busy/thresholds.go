package busy

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The JSON field names of Dynamo's /busy_threshold API. Messages name the
// fields this way so that an operator can find them in any of slotgate's
// inputs: the flag is the field name in kebab case, the env var in upper
// case with a DYN_ prefix.
const (
	fieldDecode      = "active_decode_blocks_threshold"
	fieldPrefill     = "active_prefill_tokens_threshold"
	fieldPrefillFrac = "active_prefill_tokens_threshold_frac"
)

// Thresholds are Dynamo's three busy thresholds. A nil field is a check
// that is off; with all three off a worker is never busy.
type Thresholds struct {
	// ActiveDecodeBlocks is a fraction, finite and within [0, 1], of the
	// rank's KV blocks (kv_total_blocks). A rank with more blocks in use
	// than that share is busy.
	ActiveDecodeBlocks *float64
	// ActivePrefillTokens is an absolute count of prompt tokens not yet
	// computed. A rank with more is busy.
	ActivePrefillTokens *uint64
	// ActivePrefillTokensFrac is a multiple, finite and >= 0, of the rank's
	// max_num_batched_tokens. A rank with more prefill tokens pending is busy.
	ActivePrefillTokensFrac *float64
}

// Validate returns nil when every set threshold is within its range, and
// otherwise one error per problem, joined (errors.Join), each naming the
// JSON field and the value.
func (t Thresholds) Validate() error {
	var errs []error
	if v := t.ActiveDecodeBlocks; v != nil && !validFraction(*v) {
		errs = append(errs, fmt.Errorf("%s must be a finite number between 0 and 1, got %s", fieldDecode, formatFloat(*v)))
	}
	if v := t.ActivePrefillTokensFrac; v != nil && !validFrac(*v) {
		errs = append(errs, fmt.Errorf("%s must be a finite number >= 0, got %s", fieldPrefillFrac, formatFloat(*v)))
	}
	// Every uint64 is a valid absolute token threshold.
	return errors.Join(errs...)
}

// Enabled reports whether any check is set.
func (t Thresholds) Enabled() bool {
	return t.ActiveDecodeBlocks != nil || t.ActivePrefillTokens != nil || t.ActivePrefillTokensFrac != nil
}

// String formats t for logs as the three JSON field names with their
// values, "none" for an unset one (the word Dynamo's flags take).
func (t Thresholds) String() string {
	return fieldDecode + "=" + formatFloatPtr(t.ActiveDecodeBlocks) +
		" " + fieldPrefill + "=" + formatUintPtr(t.ActivePrefillTokens) +
		" " + fieldPrefillFrac + "=" + formatFloatPtr(t.ActivePrefillTokensFrac)
}

// validFraction is the decode threshold's range. The comparisons are false
// for NaN, and ±Inf is outside [0, 1].
func validFraction(v float64) bool { return v >= 0 && v <= 1 }

// validFrac is the prefill fraction's range: NaN fails v >= 0.
func validFrac(v float64) bool { return v >= 0 && !math.IsInf(v, 1) }

// clone returns a copy of t that shares no memory with it, so that neither
// the caller's nor the package's later writes through a pointer leak into
// the other's value.
func (t Thresholds) clone() Thresholds {
	return Thresholds{
		ActiveDecodeBlocks:      clonePtr(t.ActiveDecodeBlocks),
		ActivePrefillTokens:     clonePtr(t.ActivePrefillTokens),
		ActivePrefillTokensFrac: clonePtr(t.ActivePrefillTokensFrac),
	}
}

// equal compares the values, not the pointers. A NaN is never equal to
// itself; such a check is off (see Evaluate), so that costs nothing.
func (t Thresholds) equal(u Thresholds) bool {
	return ptrEqual(t.ActiveDecodeBlocks, u.ActiveDecodeBlocks) &&
		ptrEqual(t.ActivePrefillTokens, u.ActivePrefillTokens) &&
		ptrEqual(t.ActivePrefillTokensFrac, u.ActivePrefillTokensFrac)
}

// merge returns t with each field that patch sets replaced by patch's.
// The result shares no memory with either.
func (t Thresholds) merge(patch Thresholds) Thresholds {
	out := t.clone()
	if patch.ActiveDecodeBlocks != nil {
		out.ActiveDecodeBlocks = clonePtr(patch.ActiveDecodeBlocks)
	}
	if patch.ActivePrefillTokens != nil {
		out.ActivePrefillTokens = clonePtr(patch.ActivePrefillTokens)
	}
	if patch.ActivePrefillTokensFrac != nil {
		out.ActivePrefillTokensFrac = clonePtr(patch.ActivePrefillTokensFrac)
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func ptrEqual[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// formatFloat writes the shortest text that parses back to v.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func formatFloatPtr(p *float64) string {
	if p == nil {
		return "none"
	}
	return formatFloat(*p)
}

func formatUintPtr(p *uint64) string {
	if p == nil {
		return "none"
	}
	return strconv.FormatUint(*p, 10)
}
