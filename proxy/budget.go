package proxy

import "sync/atomic"

// DefaultMaxBufferedBodyBytes bounds, when Options leave it 0, the memory
// held by the bodies of requests read while they wait.
const DefaultMaxBufferedBodyBytes = 256 << 20

// bodyBudget is the memory the bodies read while their requests wait may
// hold, all together. Without it they hold up to Q times the body limit
// (16 × 32 MiB by default). A body that does not fit is not refused: its
// request waits with the body left on the connection, and streams it to
// the engine once admitted, as a request admitted at once does. Refusing
// would turn a memory bound into an error the client did nothing to
// cause, and retries would bring the same bytes back.
type bodyBudget struct {
	left atomic.Int64
}

func newBodyBudget(bytes int64) *bodyBudget {
	b := new(bodyBudget)
	b.left.Store(bytes)
	return b
}

// take reserves n bytes and reports whether they were there; a
// reservation is all or nothing.
func (b *bodyBudget) take(n int64) bool {
	for {
		left := b.left.Load()
		if left < n {
			return false
		}
		if b.left.CompareAndSwap(left, left-n) {
			return true
		}
	}
}

// give returns n reserved bytes.
func (b *bodyBudget) give(n int64) {
	if n > 0 {
		b.left.Add(n)
	}
}
