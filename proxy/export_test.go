package proxy

// BudgetLeft is what is left of the budget for bodies read while their
// requests wait.
func (p *Proxy) BudgetLeft() int64 { return p.budget.left.Load() }

// ParseTTFT reads an X-Slo-Ttft-Ms value.
var ParseTTFT = parseTTFT

// IsEventStream tells an event stream by its Content-Type.
var IsEventStream = isEventStream
