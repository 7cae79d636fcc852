package engine

import (
	"sync"
	"time"
)

// pool keeps the idle connections of the hand-written path, the most
// recently used first.
type pool struct {
	max int // idle connections kept

	mu   sync.Mutex
	idle []*conn
}

// take removes and returns the most recently pooled connection, or nil.
func (p *pool) take() *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.idle)
	if n == 0 {
		return nil
	}
	ec := p.idle[n-1]
	p.idle[n-1] = nil
	p.idle = p.idle[:n-1]
	return ec
}

// put keeps ec for the next request, or closes it when the pool is full.
func (p *pool) put(ec *conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= p.max {
		_ = ec.c.Close()
		return
	}
	ec.idle = time.Now()
	p.idle = append(p.idle, ec)
}

// closeIdle closes every pooled connection.
func (p *pool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ec := range idle {
		_ = ec.c.Close()
	}
}
