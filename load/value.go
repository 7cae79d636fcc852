package load

// Source says where a Value came from.
type Source uint8

// The sources of a Value. The zero Source means the value is unknown.
const (
	// SourceUnknown: nobody reported the value; its number is meaningless.
	SourceUnknown Source = iota
	// SourceEngine: scraped from the engine (possibly derived, as vLLM's
	// used blocks are from its usage fraction).
	SourceEngine
	// SourceStatic: a static override from slotgate's configuration, used
	// because the engine does not export the value.
	SourceStatic
)

// String returns "engine", "static", or "unknown".
func (s Source) String() string {
	switch s {
	case SourceEngine:
		return "engine"
	case SourceStatic:
		return "static"
	}
	return "unknown"
}

// Value is an optional non-negative integer that records its source, so
// that an unknown value is never mistaken for 0.
type Value struct {
	// N is the value; meaningful only when Source is not SourceUnknown.
	N int64
	// Source is where N came from; SourceUnknown means there is no value.
	Source Source
}

// Known reports whether v holds a value.
func (v Value) Known() bool { return v.Source != SourceUnknown }

// Get returns the value and whether it is known.
func (v Value) Get() (int64, bool) { return v.N, v.Known() }

// fromEngine is a value scraped from the engine.
func fromEngine(n int64) Value { return Value{N: n, Source: SourceEngine} }

// fromStatic is a value from a static override.
func fromStatic(n int64) Value { return Value{N: n, Source: SourceStatic} }

// engineIfPresent is fromEngine(*p), or unknown when p is nil.
func engineIfPresent(p *int64) Value {
	if p == nil {
		return Value{}
	}
	return fromEngine(*p)
}
