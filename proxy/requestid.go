package proxy

// requestIDHeader carries a request's id: the client's when it sends a
// usable one, else one gate.IDs makes; the engine receives it too.
const requestIDHeader = "X-Request-Id"
