package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// apiError is an answer in OpenAI's error shape.
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d: %s", e.status, e.message) }

func badRequest(format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, message: fmt.Sprintf(format, args...)}
}

// errorBody is vLLM's ErrorResponse: {"error":{message,type,param,code}}.
type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func newErrorBody(status int, message string) errorBody {
	return errorBody{Error: errorInfo{Message: message, Type: errorType(status), Code: status}}
}

// errorType names the error as vLLM does (the exception class behind it).
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "BadRequestError"
	case http.StatusNotFound:
		return "NotFoundError"
	case http.StatusMethodNotAllowed:
		return "MethodNotAllowedError"
	case http.StatusRequestEntityTooLarge:
		return "RequestEntityTooLargeError"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableError"
	}
	return "InternalServerError"
}

func writeError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, newErrorBody(status, message))
}

func writeAPIError(w http.ResponseWriter, e *apiError) {
	writeError(w, e.status, e.message)
}

// writeJSON writes v with status; a client that left is not an error here.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = marshal(newErrorBody(status, "encode response: "+err.Error()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// marshal encodes v as one line of JSON without HTML escaping, as Python's
// json module writes it ("<", ">" and "&" stay as they are).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// submitError maps an error of Engine.Submit to its answer.
func submitError(err error, opts Options) *apiError {
	switch {
	case errors.Is(err, ErrQueueFull):
		return &apiError{status: http.StatusServiceUnavailable, message: fmt.Sprintf(
			"The engine is at capacity: max_num_queued_reqs=%d requests are running or waiting. Please retry later.",
			opts.MaxNumQueuedReqs)}
	case errors.Is(err, ErrTooLong), errors.Is(err, ErrInvalid):
		return badRequest("%s", err.Error())
	case errors.Is(err, ErrStopped):
		return &apiError{status: http.StatusServiceUnavailable, message: "The engine is shutting down."}
	}
	return &apiError{status: http.StatusInternalServerError, message: err.Error()}
}
