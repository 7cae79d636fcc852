package jsonapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Error is a request an API refuses: the status and the message of its
// {"error": message} answer.
type Error struct {
	Status  int
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unprocessable is a body that is not the JSON the API expects: a 422, as
// Dynamo answers when its JSON extractor cannot deserialize a body. The
// message is fmt.Sprintf(format, args...).
func Unprocessable(format string, args ...any) *Error {
	return &Error{Status: http.StatusUnprocessableEntity, Message: fmt.Sprintf(format, args...)}
}

// ReadBody reads r's body, at most limit bytes: an admin API takes a few
// numbers, and an admin port is no reason to buffer whatever a client
// sends. A body of exactly limit bytes is read. A larger one is a 413
// "request body larger than <limit> bytes", after which net/http closes
// the connection (http.MaxBytesReader); a body that cannot be read is a
// 400 "read request body: <err>".
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *Error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &Error{Status: http.StatusRequestEntityTooLarge,
			Message: fmt.Sprintf("request body larger than %d bytes", limit)}
	case err != nil:
		return nil, &Error{Status: http.StatusBadRequest, Message: "read request body: " + err.Error()}
	}
	return body, nil
}

// WriteJSON answers status with v encoded as application/json. When v
// cannot be encoded (a NaN, a channel) it answers 500
// {"error":"internal error"} instead; callers pass values that always
// encode, such as strings, integers and finite numbers.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// WriteError answers status with {"error": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, struct {
		Error string `json:"error"`
	}{msg})
}

// MethodNotAllowed answers a request whose method the API does not serve:
// 405 with an Allow header of allowed (such as "GET, HEAD, POST") and the
// error "method <method> not allowed; use <allowed>".
func MethodNotAllowed(w http.ResponseWriter, r *http.Request, allowed string) {
	w.Header().Set("Allow", allowed)
	WriteError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use %s", r.Method, allowed))
}
