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
	// One allocation, the string's: the prefix and the number are put
	// together on the stack first (FormatUint and a concatenation made
	// two, for a request that sent no id).
	var b [40]byte // the prefix's 13 bytes and a uint64's 20 digits fit
	return string(strconv.AppendUint(append(b[:0], s.prefix...), s.next.Add(1), 10))
}
