package engine

import (
	"context"
	"net"
	"sync"
	"time"
)

// Cut cuts an exchange of SendRaw short from another goroutine: the
// caller's context, without a context's cost (a cancellable context and
// its AfterFunc are seven allocations a request on a path that makes
// thirty). Once Now has run, the exchange's reads and writes fail at
// once, SendRaw fails with context.Canceled, and the connection is closed
// rather than pooled. Its zero value is ready; it serves one exchange.
type Cut struct {
	mu  sync.Mutex
	c   net.Conn // the exchange's connection, while it may be cut
	cut bool
}

// Now cuts the exchange short, whether it runs now or starts later.
func (k *Cut) Now() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cut = true
	if k.c != nil {
		_ = k.c.SetDeadline(time.Unix(1, 0))
	}
}

// err is context.Canceled once Now has run.
func (k *Cut) err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cut {
		return context.Canceled
	}
	return nil
}

// watch has Now cut c, from now until unwatch.
func (k *Cut) watch(c net.Conn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c = c
	if k.cut {
		_ = c.SetDeadline(time.Unix(1, 0))
	}
}

// unwatch ends the watch, and reports false when Now cut the connection.
func (k *Cut) unwatch() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.c = nil
	return !k.cut
}
