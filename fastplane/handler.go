package fastplane

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/slotgate/slotgate/gate"
)

// exchange is one request through the plane: the gate's Exchange and
// what only this plane knows of it. The connection's goroutine owns it,
// from the handler to the relay's close.
type exchange struct {
	gate.Exchange
	ctx    context.Context // Admit's: cancelled by the watch when the client leaves
	cancel context.CancelFunc
	watch  connWatch
	ended  bool // finish ran
}

// handle walks one request: passthrough paths go straight to the engine;
// every other request is admitted by the gate (waiting, watched, when it
// has to), then forwarded; its exchange is finished at once when it
// goes no further, else when its answer's relay closes.
func (s *Server) handle(rc *fasthttp.RequestCtx) {
	if s.strict(rc) {
		return
	}
	if s.passthrough[string(rc.Path())] {
		s.forward(rc, nil)
		return
	}
	ex := s.newExchange(rc)
	d := s.gate.Admit(ex.ctx, &ex.Exchange, gate.Request{Watch: &ex.watch})
	if !d.Admitted {
		if a := s.answers.refusal(ex.Outcome); a != nil {
			s.write(rc, a, ex.ID)
		} else {
			rc.SetConnectionClose() // the client left: nobody reads an answer
		}
		s.finish(ex, false)
		return
	}
	ex.BeginFlight()
	s.forward(rc, ex)
}

func (s *Server) newExchange(rc *fasthttp.RequestCtx) *exchange {
	ex := &exchange{}
	ex.ID = s.ids.For(string(rc.Request.Header.Peek(requestIDHeader)))
	ex.Start, ex.Protocol = time.Now(), gate.ProtocolHTTP
	ex.ctx, ex.cancel = context.WithCancel(context.Background())
	ex.watch = connWatch{conn: rc.Conn(), cancel: ex.cancel}
	return ex
}

// finish ends ex at the gate exactly once: its flight, its slot (after
// the abort grace when its client left mid-answer), its report.
func (s *Server) finish(ex *exchange, clientGone bool) {
	if ex.ended {
		return
	}
	ex.ended = true
	s.gate.Finish(&ex.Exchange, clientGone)
	ex.cancel()
}
