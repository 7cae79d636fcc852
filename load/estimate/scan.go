package estimate

import "unicode/utf8"

// scanDepth bounds the nesting scanLine follows; deeper input is left to
// the lexer, which goes to encoding/json's limit.
const scanDepth = 64

// scanLine reads line, the whole first data line of an event, as one JSON
// object with nothing but whitespace around it, and drives h exactly as
// the lexer would. It is the counter's fast path: an engine sends each
// event's JSON on one line and in one write, and reading a line that is
// all there is takes none of the state the lexer keeps to resume after
// any byte, nor a call per byte (it took about half the cost of counting
// a vLLM chunk).
//
// It reports false for any line it does not read to a valid end: a
// malformed one, and one that holds what only the lexer decodes (an
// escape, invalid UTF-8, deeper nesting). h is then left half-driven:
// the caller resets it and gives the line to the lexer, which decides.
// So scanLine never decides anything the lexer would decide otherwise:
// what it accepts, it reads as the lexer does, and FuzzStreamCounter
// compares the two (a whole stream takes this path; the same stream a
// byte at a time cannot).
func scanLine(line []byte, h *responseHandler) bool {
	sc := scanner{p: line, h: h}
	sc.space()
	if !sc.at('{') || !sc.value(0) {
		return false
	}
	sc.space()
	return sc.i == len(sc.p)
}

// scanner reads one line from p[i].
type scanner struct {
	p []byte
	i int
	h *responseHandler
}

func (sc *scanner) at(c byte) bool { return sc.i < len(sc.p) && sc.p[sc.i] == c }

func (sc *scanner) space() {
	for sc.i < len(sc.p) && isSpace(sc.p[sc.i]) {
		sc.i++
	}
}

func (sc *scanner) value(depth int) bool {
	if sc.i >= len(sc.p) {
		return false
	}
	switch c := sc.p[sc.i]; {
	case c == '{' || c == '[':
		return depth < scanDepth && sc.container(c == '{', depth+1)
	case c == '"':
		n, prefix, whole, ok := sc.str()
		if ok {
			sc.h.str(n, prefix, whole)
		}
		return ok
	case c == '-' || c-'0' <= 9:
		return sc.number()
	case c == 't':
		return sc.literal("true")
	case c == 'f':
		return sc.literal("false")
	case c == 'n':
		return sc.literal("null")
	}
	return false
}

// container reads an object or an array from its opening bracket.
func (sc *scanner) container(object bool, depth int) bool {
	end := byte(']')
	if object {
		end = '}'
	}
	sc.i++
	sc.h.open(object)
	sc.space()
	for first := true; ; first = false {
		if first && sc.at(end) {
			break
		}
		if object && !sc.member(depth) || !object && !sc.value(depth) {
			return false
		}
		sc.space()
		if !sc.at(',') {
			break
		}
		sc.i++
		sc.space()
	}
	if !sc.at(end) {
		return false
	}
	sc.i++
	sc.h.close()
	return true
}

// member reads `"key": value` in an object at depth.
func (sc *scanner) member(depth int) bool {
	if !sc.at('"') {
		return false
	}
	_, prefix, whole, ok := sc.str()
	if !ok {
		return false
	}
	sc.h.key(prefix, whole)
	sc.space()
	if !sc.at(':') {
		return false
	}
	sc.i++
	sc.space()
	return sc.value(depth)
}

// str reads the string at its opening quote: its length (its bytes, as
// valid UTF-8 without escapes decodes to itself), its first captureCap
// bytes, and whether they are all of it, as the lexer captures them.
func (sc *scanner) str() (n int, prefix []byte, whole, ok bool) {
	p := sc.p
	start := sc.i + 1
	i := start + plainRun(p[start:])
	ascii := true
	for ; i < len(p); i++ {
		c := p[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		ascii = ascii && c < utf8.RuneSelf
	}
	if i >= len(p) || p[i] != '"' {
		return 0, nil, false, false // an escape, a control byte or no end
	}
	s := p[start:i]
	if !ascii && !utf8.Valid(s) {
		return 0, nil, false, false
	}
	sc.i = i + 1
	return len(s), s[:min(len(s), captureCap)], len(s) <= captureCap, true
}

// number reads a number by JSON's grammar, with the value the lexer
// gives it: the integer part, saturating as addDigit does.
func (sc *scanner) number() bool {
	const ceiling = 1 << 53
	p, i := sc.p, sc.i
	neg := p[i] == '-'
	if neg {
		i++
	}
	var v int64
	switch {
	case i < len(p) && p[i] == '0':
		i++
	case i < len(p) && p[i]-'1' <= 8:
		for ; i < len(p) && p[i]-'0' <= 9; i++ {
			if v < ceiling {
				v = v*10 + int64(p[i]-'0')
			}
		}
	default:
		return false
	}
	isInt := true
	if i < len(p) && p[i] == '.' {
		isInt = false
		if i = digitsFrom(p, i+1); i < 0 {
			return false
		}
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		isInt = false
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		if i = digitsFrom(p, i); i < 0 {
			return false
		}
	}
	sc.i = i
	if neg {
		v = -v
	}
	sc.h.num(v, isInt)
	return true
}

// digitsFrom returns the index after the digits that start p[i:], or -1
// when there are none.
func digitsFrom(p []byte, i int) int {
	j := i
	for j < len(p) && p[j]-'0' <= 9 {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func (sc *scanner) literal(word string) bool {
	if len(sc.p)-sc.i < len(word) || string(sc.p[sc.i:sc.i+len(word)]) != word {
		return false
	}
	sc.i += len(word)
	sc.h.lit(word[0])
	return true
}
