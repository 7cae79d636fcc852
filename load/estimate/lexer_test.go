package estimate

import (
	"encoding/json"
	"slices"
	"testing"
)

// recorder keeps the decoded lengths of the strings and keys it is given.
type recorder struct{ lens []int }

func (r *recorder) open(bool)               {}
func (r *recorder) close()                  {}
func (r *recorder) key(name []byte, _ bool) { r.lens = append(r.lens, -len(name)-1) }
func (r *recorder) str(n int, _ []byte, _ bool) {
	r.lens = append(r.lens, n)
}
func (r *recorder) num(int64, bool) {}
func (r *recorder) lit(byte)        {}

func lex(parts ...[]byte) (bool, []int) {
	var r recorder
	var l lexer
	l.reset(&r)
	for _, p := range parts {
		l.write(p)
	}
	return l.finish(), r.lens
}

// FuzzLexer checks the lexer against encoding/json: the same inputs are
// valid, and a top-level string decodes to the same length; the result
// does not depend on splitting.
func FuzzLexer(f *testing.F) {
	for _, s := range []string{`"a\u00e9\ud83d\ude42\ud83d"`, "\"\xff\xe2\x82x\"", `{"a":[1,-0.5e+3,true,null]}`, `[01]`, `1.`, ` "x" `} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid, lens := lex(b)
		if valid != json.Valid(b) {
			t.Fatalf("lexer says valid=%v, encoding/json %v", valid, !valid)
		}
		var s string
		if valid && json.Unmarshal(b, &s) == nil && (len(lens) != 1 || lens[0] != len(s)) {
			t.Fatalf("string of %d decoded bytes, lexer counted %v", len(s), lens)
		}
		one := make([][]byte, len(b))
		for i := range b {
			one[i] = b[i : i+1]
		}
		if v, l := lex(one...); v != valid || !slices.Equal(l, lens) {
			t.Fatalf("byte at a time: %v %v, one-shot %v %v", v, l, valid, lens)
		}
	})
}
