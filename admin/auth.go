package admin

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/slotgate/slotgate/internal/jsonapi"
)

// realm names the admin port in a 401's WWW-Authenticate challenge.
const realm = "slotgate-admin"

// MaxTokenFileBytes bounds the token file: a token is a few dozen bytes,
// and a path set by mistake to a large file (or to /dev/zero) must fail
// start-up rather than fill memory.
const MaxTokenFileBytes = 4 << 10

// tokenCheckInterval is how often, at most, a request makes the token
// file be looked at again. A Kubernetes Secret update takes the kubelet a
// minute or more to reach the pod, so a second adds nothing noticeable,
// and a flood of admin calls costs one stat a second.
const tokenCheckInterval = time.Second

// challenge is the WWW-Authenticate value of every 401. It is the same for
// a missing token and a wrong one, so a caller learns nothing from it.
const challenge = `Bearer realm="` + realm + `"`

// Token is the admin port's bearer token, read from a file and read again
// when the file changes, so that a rotated Kubernetes Secret takes effect
// without a restart. The token is the file's content with surrounding
// white space trimmed. Only its SHA-256 digest is kept.
//
// The file is looked at on request, at most once a second: its path is
// stat'ed (never an open descriptor: a Secret volume is updated by
// swapping a symlink, so the path leads to a new file while an old
// descriptor still reads the old one), and it is read again when its
// identity, size or modification time differ. A read that fails, or finds
// the file empty, keeps the last good token and logs one warning until a
// read succeeds again.
//
// A Token is safe for concurrent use and starts no goroutine.
type Token struct {
	path string
	log  *zap.Logger

	mu      sync.Mutex
	digest  [sha256.Size]byte // of the token in force
	stat    os.FileInfo       // of the file digest came from
	checked time.Time         // when the file was last looked at
	failing bool              // a re-read failed and was logged; cleared by a good one
}

// NewToken reads the token file at path. It fails, naming the path, when
// the file cannot be read, is larger than MaxTokenFileBytes, or holds
// nothing but white space. A nil log logs nothing.
func NewToken(path string, log *zap.Logger) (*Token, error) {
	if log == nil {
		log = zap.NewNop()
	}
	stat, digest, err := readToken(path)
	if err != nil {
		return nil, err
	}
	return &Token{path: path, log: log, digest: digest, stat: stat, checked: time.Now()}, nil
}

// Allows reports whether r carries the token in an Authorization header:
// "Bearer <token>", the scheme in any case, as RFC 7235 allows.
func (t *Token) Allows(r *http.Request) bool {
	got, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return false
	}
	// subtle.ConstantTimeCompare returns at once when the lengths differ,
	// which would tell a caller timing the answers how long the token is.
	// Comparing digests compares 32 bytes whatever was sent; the hash of a
	// wrong guess says nothing useful about the token.
	sum := sha256.Sum256([]byte(got))
	want := t.current()
	return subtle.ConstantTimeCompare(sum[:], want[:]) == 1
}

// bearer returns the credentials of an Authorization header value of the
// Bearer scheme; ok is false for another scheme, or for no credentials.
func bearer(header string) (token string, ok bool) {
	scheme, rest, found := strings.Cut(header, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.Trim(rest, " \t")
	return token, token != ""
}

// current returns the digest of the token in force, first looking at the
// file again when it was last looked at a second ago or more.
func (t *Token) current() [sha256.Size]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now := time.Now(); now.Sub(t.checked) >= tokenCheckInterval {
		t.checked = now
		t.refresh()
	}
	return t.digest
}

// refresh reads the file again when it changed. t.mu is held.
func (t *Token) refresh() {
	stat, err := os.Stat(t.path)
	if err == nil && sameFile(stat, t.stat) {
		return
	}
	var digest [sha256.Size]byte
	if err == nil {
		stat, digest, err = readToken(t.path)
	}
	if err != nil {
		// The stat of the last good file is kept, so the next look reads
		// again: a Secret being swapped may be absent for a moment.
		if !t.failing {
			t.failing = true
			t.log.Warn("cannot read the admin token file again; the last good token stays in force",
				zap.String("path", t.path), zap.Error(err))
		}
		return
	}
	changed := digest != t.digest
	t.digest, t.stat, t.failing = digest, stat, false
	if changed {
		t.log.Info("admin token file changed; the new token is in force", zap.String("path", t.path))
	}
}

// sameFile reports whether a and b are the same file, unchanged: a Secret
// update gives the path a new file, and an edit in place a new size or
// modification time.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// readToken reads the token file at path and returns its stat, taken
// before the read (so that a change during the read is seen next time),
// and the digest of its trimmed content.
func readToken(path string) (os.FileInfo, [sha256.Size]byte, error) {
	var digest [sha256.Size]byte
	stat, err := os.Stat(path)
	if err != nil {
		return nil, digest, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, digest, err
	}
	defer f.Close()
	content, err := io.ReadAll(io.LimitReader(f, MaxTokenFileBytes+1))
	switch {
	case err != nil:
		return nil, digest, fmt.Errorf("read %s: %w", path, err)
	case len(content) > MaxTokenFileBytes:
		return nil, digest, fmt.Errorf("token file %s is larger than %d bytes", path, MaxTokenFileBytes)
	}
	token := bytes.TrimSpace(content)
	if len(token) == 0 {
		return nil, digest, errors.New("token file " + path + " is empty")
	}
	return stat, sha256.Sum256(token), nil
}

// requireToken wraps h so that every request but a GET or a HEAD must
// carry t: those read, and probes and scrapers send no token; everything
// else changes something, or may in a later version. One wrapper for the
// whole mux, rather than one per route, so that no route added later can
// be forgotten.
func requireToken(h http.Handler, t *Token) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead || t.Allows(r) {
			h.ServeHTTP(w, r)
			return
		}
		if c := t.log.Check(zap.DebugLevel, "admin request refused: no valid bearer token"); c != nil {
			c.Write(zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.String("remote", r.RemoteAddr))
		}
		w.Header().Set("WWW-Authenticate", challenge)
		w.Header().Set("Cache-Control", "no-store")
		jsonapi.WriteError(w, http.StatusUnauthorized, "a missing or wrong bearer token: this admin call needs the admin token")
	})
}
