package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync/atomic"
)

const requestIDHeader = "X-Request-Id"

// maxClientRequestID bounds a client-supplied id; longer ones are replaced
// so that logs stay sane.
const maxClientRequestID = 128

// idSource makes request ids: a random prefix per process and a counter,
// unique and cheap (no system call per request).
type idSource struct {
	prefix string
	next   atomic.Uint64
}

func newIDSource() *idSource {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return &idSource{prefix: hex.EncodeToString(b) + "-"}
}

// forRequest returns the client's X-Request-Id when it has a usable one,
// and a new id otherwise.
func (s *idSource) forRequest(r *http.Request) string {
	if v := r.Header.Get(requestIDHeader); v != "" && len(v) <= maxClientRequestID {
		return v
	}
	return s.prefix + strconv.FormatUint(s.next.Add(1), 10)
}
