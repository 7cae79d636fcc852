package router

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
)

// StatusOverloaded is the answer when every worker is busy or marked, and
// the status of a worker that refused for capacity: Dynamo's 529.
const StatusOverloaded = 529

// MessageOverloaded is the 529's message, Dynamo's and slotgate's words.
const MessageOverloaded = "Server overloaded: worker at capacity"

// errorBody is OpenAI's error shape, as slotgate answers it.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    int    `json:"code"`
	} `json:"error"`
}

// refuse answers a request no worker took: 529 with Retry-After when
// workers are known but none is eligible, 503 when none is registered or
// reachable. It is the one place where a pick's failure becomes a status.
func (r *Router) refuse(w http.ResponseWriter, err error) {
	status, typ, msg := StatusOverloaded, "Overloaded", MessageOverloaded
	if errors.Is(err, errUnavailable) {
		status, typ, msg = http.StatusServiceUnavailable, "Unavailable", "Service unavailable: "+err.Error()
		r.counters.client503.Add(1)
	} else {
		// A marked worker is eligible again when its cooldown ends: the
		// soonest a retry can find room.
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(r.cooldown.Seconds()))))
		r.counters.client529.Add(1)
	}
	var b errorBody
	b.Error.Message, b.Error.Type, b.Error.Code = msg, typ, status
	body, _ := json.Marshal(b) // fixed shape: cannot fail
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n')) // the client may be gone; nothing to do about it
}
