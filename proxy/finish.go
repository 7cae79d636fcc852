package proxy

import (
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
	ce := p.access.Check(zap.InfoLevel, "request")
	if ce == nil {
		return // the access log is off, or below its level
	}
	ce.Write(zap.Inline(&accessLine{rec: rec, r: r, end: end}))
}

// accessLine is one access-log line, encoded field by field: a slice of
// twelve zap.Fields was the largest allocation of a refusal.
type accessLine struct {
	rec *recorder
	r   *http.Request
	end time.Time
}

func (l *accessLine) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	rec, r := l.rec, l.r
	var ttfb time.Duration
	if !rec.firstByte.IsZero() {
		ttfb = rec.firstByte.Sub(rec.start)
	}
	enc.AddString("request_id", rec.id)
	enc.AddString("method", r.Method)
	enc.AddString("path", r.URL.Path)
	enc.AddString("proto", r.Proto)
	enc.AddInt64("status", int64(rec.status))
	enc.AddString("outcome", string(rec.outcome))
	enc.AddDuration("queue_wait", rec.queueWait)
	enc.AddDuration("ttfb", ttfb)
	enc.AddDuration("duration", l.end.Sub(rec.start))
	enc.AddInt64("bytes_in", rec.bytesIn)
	enc.AddInt64("bytes_out", rec.bytes)
	enc.AddString("client", r.RemoteAddr)
	return nil
}
