package proxy

// BudgetLeft is what is left of the budget for bodies read while their
// requests wait.
func (p *Proxy) BudgetLeft() int64 { return p.budget.left.Load() }
