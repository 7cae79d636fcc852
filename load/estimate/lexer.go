package estimate

import (
	"encoding/binary"
	"unicode/utf8"
)

// maxDepth is the deepest nesting the lexer accepts, encoding/json's limit.
const maxDepth = 10000

// captureCap is how many decoded bytes of a string the lexer keeps: enough
// for every key and short value the handlers compare against.
const captureCap = 32

// handler receives the lexer's tokens. Strings arrive whole, as their
// decoded length in bytes and at most captureCap bytes of their start.
type handler interface {
	open(object bool)
	close()
	key(name []byte, whole bool)
	str(n int, prefix []byte, whole bool)
	num(v int64, isInt bool)
	lit(c byte) // 't', 'f' or 'n'
}

type lexState uint8

const (
	lsValue      lexState = iota // a value
	lsValueOrEnd                 // after '[': a value or ']'
	lsKeyOrEnd                   // after '{': a key or '}'
	lsKey                        // after ',' in an object
	lsColon                      // after a key
	lsAfter                      // after a value inside a container
	lsEnd                        // after the top-level value: whitespace only
	lsString                     // inside a string
	lsEscape                     // after '\'
	lsHex                        // inside \uXXXX
	lsNumber                     // inside a number
	lsLiteral                    // inside true, false or null
	lsError                      // malformed: everything else is ignored
)

// Number sub-states; the ones marked "may end" accept the number's end.
const (
	nMinus uint8 = iota // after '-'
	nZero               // leading 0, may end
	nInt                // integer digits, may end
	nDot                // after '.'
	nFrac               // fraction digits, may end
	nE                  // after 'e'
	nESign              // after the exponent's sign
	nExp                // exponent digits, may end
)

// lexer is an incremental JSON tokenizer: it takes bytes in any split,
// keeps O(depth) state and never copies more than captureCap bytes of a
// string. It accepts exactly what encoding/json's Valid accepts, and counts
// a string's bytes as encoding/json decodes them (invalid UTF-8 and lone
// surrogates become U+FFFD).
type lexer struct {
	h     handler
	st    lexState
	stack []byte // '{' or '[' per open container

	// The string in progress.
	isKey    bool
	strLen   int
	capt     [captureCap]byte
	captN    int
	captOver bool
	hex      rune
	hexN     int
	high     rune // a \u high surrogate waiting for its low half, or 0
	pend     [utf8.UTFMax]byte
	pendN    int

	// The number or literal in progress.
	numSt  uint8
	numNeg bool
	numV   int64
	numInt bool
	lit    string
	litI   int
}

func (l *lexer) reset(h handler) {
	stack := l.stack[:0]
	*l = lexer{h: h, stack: stack}
}

// write feeds p; a malformed input puts the lexer in lsError for good.
// The common bytes of compact JSON (runs of plain string bytes and
// digits, the quote that ends a string, and the punctuation between
// members) are taken here; step takes every other byte, one at a time.
func (l *lexer) write(p []byte) {
	for i := 0; i < len(p); {
		c := p[i]
		switch l.st {
		case lsError:
			return
		case lsString:
			if n := l.plainString(p[i:]); n > 0 {
				i += n
				continue
			}
		case lsNumber:
			if n := l.digits(p[i:]); n > 0 {
				i += n
				continue
			}
		case lsColon:
			if c == ':' {
				l.st = lsValue
				i++
				continue
			}
		case lsAfter:
			if c == ',' {
				l.st = lsValue
				if l.stack[len(l.stack)-1] == '{' {
					l.st = lsKey
				}
				i++
				continue
			}
		case lsKey, lsKeyOrEnd:
			if c == '"' {
				l.beginString(true)
				i++
				continue
			}
		}
		if l.step(c) {
			i++
		}
	}
}

// plainString takes a run of plain ASCII at the start of p inside a
// string, and the quote that usually ends it, when nothing is pending
// to flush before them; it returns the bytes taken.
func (l *lexer) plainString(p []byte) int {
	if l.high != 0 || l.pendN != 0 {
		return 0
	}
	j := plainRun(p)
	if j > 0 {
		l.emit(p[:j])
	}
	if j < len(p) && p[j] == '"' {
		l.endString()
		j++
	}
	return j
}

// digits takes the digits of an integer at the start of p; it returns the
// bytes taken.
func (l *lexer) digits(p []byte) int {
	if l.numSt != nInt {
		return 0
	}
	j := 0
	for j < len(p) && p[j]-'0' <= 9 {
		l.addDigit(p[j])
		j++
	}
	return j
}

// plainRun is the length of the run of plain string bytes at the start
// of p: printable ASCII other than '"' and '\\'. It tests eight bytes at
// a time while it can (SWAR): a byte loop was the lexer's costliest line.
func plainRun(p []byte) int {
	i := 0
	for ; i+8 <= len(p); i += 8 {
		if special8(binary.LittleEndian.Uint64(p[i:])) {
			break
		}
	}
	for ; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			break
		}
	}
	return i
}

// special8 reports whether any of the eight bytes of x is not a plain
// string byte: a control byte (below 0x20), a non-ASCII one, '"' or '\\'.
// Each test is the classic "has a byte less than n" bit trick, which can
// misreport a byte only above one that is truly special, so the answer
// for the eight bytes as a whole is exact.
func special8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	below := (x-ones*0x20)&^x |
		(quote-ones)&^quote |
		(backslash-ones)&^backslash
	return (below|x)&highs != 0
}

// finish ends the input and reports whether it was one complete JSON value.
func (l *lexer) finish() bool {
	if l.st == lsNumber && l.numEnds() {
		l.endNumber()
	}
	return l.st == lsEnd
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// step takes one byte and reports whether it was consumed; a byte that ends
// a number is not, and is taken again in the next state.
func (l *lexer) step(c byte) bool {
	switch l.st {
	case lsValue, lsValueOrEnd:
		switch {
		case isSpace(c):
		case c == ']' && l.st == lsValueOrEnd:
			l.closeContainer(c)
		default:
			l.beginValue(c)
		}
	case lsKeyOrEnd, lsKey:
		switch {
		case isSpace(c):
		case c == '"':
			l.beginString(true)
		case c == '}' && l.st == lsKeyOrEnd:
			l.closeContainer(c)
		default:
			l.st = lsError
		}
	case lsColon:
		switch {
		case isSpace(c):
		case c == ':':
			l.st = lsValue
		default:
			l.st = lsError
		}
	case lsAfter:
		top := l.stack[len(l.stack)-1]
		switch {
		case isSpace(c):
		case c == ',' && top == '{':
			l.st = lsKey
		case c == ',':
			l.st = lsValue
		case c == '}' || c == ']':
			l.closeContainer(c)
		default:
			l.st = lsError
		}
	case lsEnd:
		if !isSpace(c) {
			l.st = lsError
		}
	case lsString:
		l.stringByte(c)
	case lsEscape:
		l.escapeByte(c)
	case lsHex:
		l.hexByte(c)
	case lsNumber:
		return l.numberByte(c)
	case lsLiteral:
		if c != l.lit[l.litI] {
			l.st = lsError
			break
		}
		l.litI++
		if l.litI == len(l.lit) {
			l.h.lit(l.lit[0])
			l.afterValue()
		}
	}
	return true
}

func (l *lexer) beginValue(c byte) {
	switch {
	case c == '{' || c == '[':
		if len(l.stack) >= maxDepth {
			l.st = lsError
			return
		}
		l.stack = append(l.stack, c)
		l.h.open(c == '{')
		if c == '{' {
			l.st = lsKeyOrEnd
		} else {
			l.st = lsValueOrEnd
		}
	case c == '"':
		l.beginString(false)
	case c == '-' || c >= '0' && c <= '9':
		l.st, l.numNeg, l.numV, l.numInt = lsNumber, c == '-', 0, true
		switch c {
		case '-':
			l.numSt = nMinus
		case '0':
			l.numSt = nZero
		default:
			l.numSt, l.numV = nInt, int64(c-'0')
		}
	case c == 't':
		l.st, l.lit, l.litI = lsLiteral, "true", 1
	case c == 'f':
		l.st, l.lit, l.litI = lsLiteral, "false", 1
	case c == 'n':
		l.st, l.lit, l.litI = lsLiteral, "null", 1
	default:
		l.st = lsError
	}
}

func (l *lexer) closeContainer(c byte) {
	top := l.stack[len(l.stack)-1]
	if c == '}' && top != '{' || c == ']' && top != '[' {
		l.st = lsError
		return
	}
	l.stack = l.stack[:len(l.stack)-1]
	l.h.close()
	l.afterValue()
}

func (l *lexer) afterValue() {
	if len(l.stack) == 0 {
		l.st = lsEnd
	} else {
		l.st = lsAfter
	}
}
