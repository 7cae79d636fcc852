package proxy

import (
	"net/http"
	"time"

	"go.uber.org/zap"
)

// finish runs last for every request. It settles the outcome of a request
// cut short by a panic (httputil.ReverseProxy panics with
// http.ErrAbortHandler when a stream breaks after its headers were sent),
// reports the request once and writes its access-log line, then re-panics
// so that net/http aborts the connection as it should.
func (p *Proxy) finish(rec *recorder, r *http.Request) {
	v := recover()
	if v != nil {
		if rec.clientGone(r) {
			p.setOutcome(rec, CancelledRunning)
		} else {
			p.setOutcome(rec, EngineError)
		}
	}
	if rec.status == 0 && rec.clientGone(r) {
		rec.status = StatusClientClosedRequest
	}
	end := time.Now()
	p.endLifecycle(rec)
	if rec.outcome != Passthrough {
		p.changed() // the slot or queue place is free by now
	}
	p.report(rec, end)
	p.logAccess(rec, r, end)
	if v != nil {
		panic(v)
	}
}

func (p *Proxy) report(rec *recorder, end time.Time) {
	if rec.outcome == Passthrough {
		return
	}
	p.obs.RequestDone(string(rec.outcome), rec.class)
	if rec.admitted || rec.queued {
		p.obs.QueueWait(rec.class, rec.queueWait.Seconds())
	}
	if !rec.firstByte.IsZero() && (rec.outcome == AdmittedDirect || rec.outcome == AdmittedQueued) {
		p.obs.FirstByte(rec.firstByte.Sub(rec.start).Seconds())
	}
}

func (p *Proxy) logAccess(rec *recorder, r *http.Request, end time.Time) {
	var ttfb time.Duration
	if !rec.firstByte.IsZero() {
		ttfb = rec.firstByte.Sub(rec.start)
	}
	p.access.Info("request",
		zap.String("request_id", rec.id),
		zap.String("method", r.Method),
		zap.String("path", r.URL.Path),
		zap.String("proto", r.Proto),
		zap.Int("status", rec.status),
		zap.String("outcome", string(rec.outcome)),
		zap.Duration("queue_wait", rec.queueWait),
		zap.Duration("ttfb", ttfb),
		zap.Duration("duration", end.Sub(rec.start)),
		zap.Int64("bytes_in", rec.bytesIn),
		zap.Int64("bytes_out", rec.bytes),
		zap.String("client", r.RemoteAddr),
	)
}
