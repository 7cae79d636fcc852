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
	// SourceSlotgate: slotgate's own count of the requests it forwards.
	SourceSlotgate
)

// String returns "engine", "static", "slotgate", or "unknown".
func (s Source) String() string {
	switch s {
	case SourceEngine:
		return "engine"
	case SourceStatic:
		return "static"
	case SourceSlotgate:
		return "slotgate"
	}
	return "unknown"
}

// Value is an optional count that records its source, so that an unknown
// value is never mistaken for 0. The zero Value is unknown.
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
