package proxy

import (
	"reflect"
	"testing"
	"time"

	"github.com/slotgate/slotgate/gate"
	"github.com/slotgate/slotgate/load/estimate"
)

// TestExchangesComeBackZeroed: an exchange given back keeps nothing of its
// request (a prompt estimate kept would be the next request's, and a
// stream taken for a plain request), and one taken is its proxy's, its
// writer and body watch pointing at it.
func TestExchangesComeBackZeroed(t *testing.T) {
	var e exchanges
	p := &Proxy{}
	ex := e.take(p)
	if ex.p != p || ex.out.ex != ex || ex.watch.ex != ex {
		t.Fatalf("taken: proxy %p, writer's %p, watch's %p; want %p, %p, %p", ex.p, ex.out.ex, ex.watch.ex, p, ex, ex)
	}
	ex.ID, ex.Start, ex.Outcome, ex.Queued = "r-1", time.Now(), gate.AdmittedQueued, true
	ex.prompt, ex.promptMade = estimate.Estimate{Stream: true}, true
	ex.bytesIn, ex.relayed, ex.out.status = 42, true, 200
	ex.bodyEnded.Store(true)
	e.give(ex)
	if v := reflect.ValueOf(ex).Elem(); !v.IsZero() {
		for i := range v.NumField() {
			if !v.Field(i).IsZero() {
				t.Errorf("given back with %s set", v.Type().Field(i).Name)
			}
		}
	}
}

// TestRelayedStreamGivesBack: a relayed stream's end gives its token
// counter back, and its exchange too when the front end took it from its
// pool (zeroed, and the stream holding it no more); an exchange of
// net/http's handler, which may still hold it, stays as it is.
func TestRelayedStreamGivesBack(t *testing.T) {
	for _, pooled := range []bool{true, false} {
		p := &Proxy{}
		ex := p.exchanges.take(p)
		ex.ID = "r-1"
		rs := &relayed{ex: ex, pooled: pooled, count: newTokenCount(ex)}
		rs.giveBack(p)
		if rs.count.counter != nil || rs.count.ex != nil {
			t.Errorf("pooled %t: the token counter is still the stream's", pooled)
		}
		if given := ex.ID == "" && ex.p == nil; given != pooled {
			t.Errorf("pooled %t: exchange given back (zeroed) %t", pooled, given)
		}
		if (rs.ex == nil) != pooled {
			t.Errorf("pooled %t: the stream still holds its exchange: %t", pooled, rs.ex != nil)
		}
	}
}
