package limiter

// drr orders waiters of several policy classes by deficit round robin
// (Shreedhar and Varghese, 1995), one grant at a time:
//
//   - Each class keeps its waiters in a FIFO list. The classes that have
//     waiters form a ring in the order they last became non-empty; a class
//     that becomes non-empty joins just behind the head, so it is visited
//     after every class already waiting.
//   - The head of the ring is the class being visited. A visit starts by
//     adding the class's quantum to its deficit. While the visit lasts, each
//     grant goes to the class's oldest waiter and subtracts that waiter's
//     cost from the deficit.
//   - The visit ends when, at a grant, the oldest waiter costs more than the
//     deficit: the deficit is kept and the next class in the ring is
//     visited. It also ends when the class empties, whether by a grant or
//     because its last waiter left: the deficit is then reset to 0 and the
//     class leaves the ring.
//
// Stepping through visits one at a time could take cost/quantum rounds for
// one grant. pop finds in one pass over the ring which class standard DRR
// would serve, and after how many visits, and charges every class exactly
// the quanta those visits would have added, so each operation is O(1),
// or O(number of classes) when a visit ends.
type drr struct {
	// head is the class being visited, or nil when no class has waiters.
	head *class
	// charged reports that head's visit has started: its quantum was added.
	charged bool
}

func (d *drr) push(w *waiter) {
	c := w.cls
	if c.fifo.head == nil {
		d.join(c)
	}
	c.fifo.push(w)
}

func (d *drr) remove(w *waiter) {
	c := w.cls
	c.fifo.remove(w)
	if c.fifo.head == nil {
		d.leave(c)
	}
}

// peek finds the waiter pop would grant without advancing the ring: the
// head class's oldest waiter while its visit goes on, else the oldest of
// the class nextVisit would pick.
func (d *drr) peek() *waiter {
	h := d.head
	if h == nil {
		return nil
	}
	if d.visitGoesOn() {
		return h.fifo.head
	}
	best, _, _ := d.winner()
	return best.fifo.head
}

// visitGoesOn reports whether the head class's visit has started and its
// oldest waiter fits its deficit, so the next grant is in this visit.
func (d *drr) visitGoesOn() bool {
	return d.charged && d.head.fifo.head.cost <= d.head.deficit
}

func (d *drr) pop() *waiter {
	h := d.head
	if h == nil {
		return nil
	}
	if !d.visitGoesOn() {
		h = d.nextVisit()
	}
	w := h.fifo.head
	h.deficit -= w.cost
	w.charged, w.period = w.cost, h.period // before remove, which may end the period
	d.remove(w)
	return w
}

// refund gives w's cost back to its class's deficit, after pop granted w
// but the grant was reversed because w's caller left in the same instant,
// so that the class keeps the credit for a grant it did not get. The
// visits the round robin made to reach the grant stand; only the charge
// is undone.
//
// Nothing is refunded when pop did not charge w (popNewest charges
// nothing) or when the class has emptied since the charge: its deficit
// was then reset to 0, as DRR does for every class that empties (w itself
// may have been its last waiter), and a later busy period owes nothing to
// an earlier one. Otherwise the class is in the ring, and the refund is
// capped so that its deficit stays within what DRR ever holds: below
// maxCost, plus its quantum while its visit is under way. The cap only
// binds when the class's visit ended between the grant and its reversal.
func (d *drr) refund(w *waiter) {
	c := w.cls
	if w.charged != 0 && c.period == w.period {
		limit := int64(maxCost)
		if d.head == c && d.charged {
			limit += c.quantum
		}
		c.deficit = min(c.deficit+w.charged, limit-1)
	}
	w.charged = 0
}

// popNewest takes the newest waiter of all classes, the one with the
// highest arrival number among the classes' tails. It is adaptive LIFO's
// exception to the round robin: nothing is charged to the class's
// deficit, so the fair shares among the classes that stay backlogged are
// those of the FIFO grants alone.
func (d *drr) popNewest() *waiter {
	newest := d.peekNewest()
	if newest != nil {
		d.remove(newest)
	}
	return newest
}

// peekNewest returns the waiter popNewest would take, or nil.
func (d *drr) peekNewest() *waiter {
	if d.head == nil {
		return nil
	}
	newest := d.head.fifo.tail
	for c := d.head.next; c != d.head; c = c.next {
		if t := c.fifo.tail; t.seq > newest.seq {
			newest = t
		}
	}
	return newest
}

// nextVisit advances the ring to the class whose oldest waiter standard
// DRR serves next, adding to every class the quanta of the visits made on
// the way, and returns it; its visit has started and its oldest waiter
// fits its deficit.
//
// The visits run in ring order from start: the head itself if its visit
// has not started, else the class after it. The class at position i (from
// 0) succeeds at its j-th visit, where j is the least j >= 1 with deficit
// + j*quantum >= cost, and that visit comes at step (j-1)*k + i of k
// classes. The least step wins: the least j, and among equal j the first
// position. Classes before the winner are visited j times, those after it
// j-1 times.
func (d *drr) nextVisit() *class {
	best, start, visits := d.winner()
	for c := start; ; c = c.next {
		c.deficit += visits * c.quantum
		if c == best {
			visits--
		}
		if c.next == start {
			break
		}
	}
	d.head, d.charged = best, true
	return best
}

// winner returns, changing nothing, the class nextVisit advances to, the
// class its visits start from, and j, the visits the winner needs.
func (d *drr) winner() (best, start *class, j int64) {
	start = d.head
	if d.charged {
		start = start.next
	}
	c := start
	for {
		need := c.fifo.head.cost - c.deficit
		cj := int64(1)
		if need > c.quantum {
			cj = (need + c.quantum - 1) / c.quantum
		}
		if best == nil || cj < j {
			best, j = c, cj
		}
		if c = c.next; c == start {
			break
		}
	}
	return best, start, j
}

// join puts c, which has just become non-empty, at the tail of the ring.
func (d *drr) join(c *class) {
	h := d.head
	if h == nil {
		c.prev, c.next = c, c
		d.head, d.charged = c, false
		return
	}
	c.prev, c.next = h.prev, h
	h.prev.next = c
	h.prev = c
}

// leave takes c, which has just become empty, out of the ring, resets
// its deficit and ends its busy period. If c was being visited, the next
// class's visit is due.
func (d *drr) leave(c *class) {
	c.deficit = 0
	c.period++
	switch {
	case c.next == c:
		d.head, d.charged = nil, false
	case d.head == c:
		d.head, d.charged = c.next, false
		fallthrough
	default:
		c.prev.next = c.next
		c.next.prev = c.prev
	}
	c.prev, c.next = nil, nil
}
