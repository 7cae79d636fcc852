package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// FaultsPath is the admin endpoint of the fault set: GET returns it, PUT
// (or POST) replaces it, both as FaultSetJSON.
const FaultsPath = "/enginesim/faults"

// keepAliveInterval is how often a never-ending stream sends an SSE
// comment, so that it looks alive to a client or proxy that times out
// idle streams.
const keepAliveInterval = time.Second

// faultSetJSON is a FaultSet as the admin call reads and writes it:
// durations as Go duration strings.
type faultSetJSON struct {
	ResetRate          float64 `json:"reset_rate"`
	ErrorRate          float64 `json:"error_rate"`
	StallRate          float64 `json:"stall_rate"`
	Stall              string  `json:"stall"`
	SlowFirstTokenRate float64 `json:"slow_first_token_rate"`
	SlowFirstToken     string  `json:"slow_first_token"`
	NeverEndRate       float64 `json:"never_end_rate"`
}

func toJSON(s FaultSet) faultSetJSON {
	return faultSetJSON{
		ResetRate: s.ResetRate, ErrorRate: s.ErrorRate, StallRate: s.StallRate, Stall: s.Stall.String(),
		SlowFirstTokenRate: s.SlowFirstTokenRate, SlowFirstToken: s.SlowFirstToken.String(), NeverEndRate: s.NeverEndRate,
	}
}

// ParseFaultSet reads the admin call's JSON object. Every field is
// optional: a missing (or null) rate is 0 and a missing duration
// DefaultFaultPause. It returns every problem, joined, each naming the
// field and the value as given; an unknown field is one.
func ParseFaultSet(body []byte) (FaultSet, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return FaultSet{}, fmt.Errorf("the body must be a JSON object such as {\"reset_rate\":0.01,\"stall\":\"2s\"}, got %q", strings.TrimSpace(string(body)))
	}
	set := DefaultFaultSet()
	var errs []error
	known := map[string]bool{}
	rate := func(name string, v *float64) {
		known[name] = true
		raw, ok := fields[name]
		if !ok || isAbsent(raw) {
			return
		}
		if err := json.Unmarshal(raw, v); err != nil || *v < 0 || *v > 1 {
			errs = append(errs, fmt.Errorf("%s: must be a number from 0 through 1, got %s", name, raw))
		}
	}
	duration := func(name string, v *time.Duration) {
		known[name] = true
		raw, ok := fields[name]
		if !ok || isAbsent(raw) {
			return
		}
		var s string
		d, err := time.Duration(0), json.Unmarshal(raw, &s)
		if err == nil {
			d, err = time.ParseDuration(s)
		}
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s: must be a non-negative duration string such as \"2s\" or \"500ms\", got %s", name, raw))
			return
		}
		*v = d
	}
	rate("reset_rate", &set.ResetRate)
	rate("error_rate", &set.ErrorRate)
	rate("stall_rate", &set.StallRate)
	duration("stall", &set.Stall)
	rate("slow_first_token_rate", &set.SlowFirstTokenRate)
	duration("slow_first_token", &set.SlowFirstToken)
	rate("never_end_rate", &set.NeverEndRate)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if !known[name] {
			errs = append(errs, fmt.Errorf("%s: unknown field, got %s", name, fields[name]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return FaultSet{}, err
	}
	return set, nil
}

// FaultFields are the log fields of a fault set, named as its JSON.
func FaultFields(s FaultSet) []zap.Field {
	return []zap.Field{
		zap.Float64("reset_rate", s.ResetRate), zap.Float64("error_rate", s.ErrorRate),
		zap.Float64("stall_rate", s.StallRate), zap.String("stall", s.Stall.String()),
		zap.Float64("slow_first_token_rate", s.SlowFirstTokenRate), zap.String("slow_first_token", s.SlowFirstToken.String()),
		zap.Float64("never_end_rate", s.NeverEndRate),
	}
}

// addFaultRoutes serves the admin call at FaultsPath.
func (s *server) addFaultRoutes(rt router) {
	get := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, toJSON(s.faults.Set()))
	}
	replace := func(w http.ResponseWriter, r *http.Request) {
		var raw json.RawMessage
		if e := decodeBody(w, r, &raw); e != nil {
			writeAPIError(w, e)
			return
		}
		set, err := ParseFaultSet(raw)
		if err == nil {
			err = s.faults.Replace(set)
		}
		if err != nil {
			writeAPIError(w, badRequest("Invalid fault set: %s", strings.ReplaceAll(err.Error(), "\n", "; ")))
			return
		}
		s.log.Info("fault set replaced", FaultFields(set)...)
		get(w, r)
	}
	rt.add(http.MethodGet, FaultsPath, get)
	rt.add(http.MethodPut, FaultsPath, replace)
	rt.add(http.MethodPost, FaultsPath, replace)
}

// cut ends the request at the engine and then cuts its connection: an
// engine that drops a request is done with it before its peer can see the
// reset, so a proxy that hands the slot on at the reset never finds the
// engine still counting the request in flight.
func (p *faultPlan) cut(w http.ResponseWriter) {
	if p.done != nil {
		p.done()
	}
	resetConn(w)
}

// resetConn cuts the connection of w abruptly. Over HTTP/1.1 it hijacks
// the connection and closes it with SO_LINGER 0, so the peer gets a TCP
// reset and not a clean end of the chunked body. Where hijacking is not
// possible (HTTP/2), it panics with http.ErrAbortHandler, which net/http
// turns into a stream reset without logging; the caller's deferred calls
// run either way.
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	c := conn
	if u, ok := c.(interface{ NetConn() net.Conn }); ok { // TLS
		c = u.NetConn()
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // best effort: the close below cuts it either way
	}
	_ = conn.Close()
}
