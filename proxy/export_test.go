package proxy

import "net"

// BudgetLeft is what is left of the budget for bodies read while their
// requests wait.
func (p *Proxy) BudgetLeft() int64 { return p.budget.left.Load() }

// ParseTTFT reads an X-Slo-Ttft-Ms value.
var ParseTTFT = parseTTFT

// IsEventStream tells an event stream by its Content-Type.
var IsEventStream = isEventStream

// RefuseEarly is AnswerEarly's refusal alone (refuseHead), from a raw
// head: the tests compare it byte for byte with net/http's answer.
func (p *Proxy) RefuseEarly(head []byte, remote net.Addr, dst []byte) ([]byte, bool) {
	h, ok := p.earlyHead(head)
	if !ok {
		return dst, false
	}
	return p.refuseHead(&h, remote, dst)
}

// AnswerWaiting is answerWaiting: a waiting client's request, refused in
// the relay's loop.
func (p *Proxy) AnswerWaiting(req []byte, remote net.Addr, out []byte) ([]byte, bool) {
	return p.answerWaiting(req, remote, out)
}
