package gate

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync/atomic"
)

// MaxClientRequestID bounds the request id a client may give; a longer one
// is replaced, so that logs stay sane.
const MaxClientRequestID = 128

// IDs makes request ids for an adapter: the client's own when it gave a
// usable one, else a random prefix per IDs and a counter, unique and
// cheap (no system call per request). It is safe for concurrent use.
type IDs struct {
	prefix string
	next   atomic.Uint64
}

// NewIDs returns an IDs with a fresh random prefix.
func NewIDs() *IDs {
	b := make([]byte, 6)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return &IDs{prefix: hex.EncodeToString(b) + "-"}
}

// For returns client, the id the client sent, when it is usable (not
// empty, at most MaxClientRequestID bytes), and a new id otherwise.
func (s *IDs) For(client string) string {
	if client != "" && len(client) <= MaxClientRequestID {
		return client
	}
	return s.prefix + strconv.FormatUint(s.next.Add(1), 10)
}
