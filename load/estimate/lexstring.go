package estimate

import "unicode/utf8"

// This file decodes strings and numbers for the lexer. String lengths are
// the lengths encoding/json's decoding gives, so that a text estimate is
// the same as a count over the decoded text (sim.CountText).

func (l *lexer) beginString(isKey bool) {
	l.st, l.isKey = lsString, isKey
	l.strLen, l.captN, l.captOver, l.high, l.pendN = 0, 0, false, 0, 0
}

// emit adds decoded bytes to the string in progress.
func (l *lexer) emit(b []byte) {
	l.strLen += len(b)
	if l.captOver {
		return
	}
	if l.captN+len(b) > captureCap {
		l.captOver = true
		b = b[:captureCap-l.captN]
	}
	l.captN += copy(l.capt[l.captN:], b)
}

func (l *lexer) emitRune(r rune) {
	var buf [utf8.UTFMax]byte
	l.emit(utf8.AppendRune(buf[:0], r))
}

func (l *lexer) stringByte(c byte) {
	switch {
	case c == '"':
		l.flushHigh()
		l.flushPend()
		l.endString()
	case c == '\\':
		l.flushPend()
		l.st = lsEscape
	case c < 0x20:
		l.st = lsError
	case c < utf8.RuneSelf:
		l.flushHigh()
		l.flushPend()
		l.emit([]byte{c})
	default:
		l.flushHigh()
		l.pend[l.pendN] = c
		l.pendN++
		for l.pendN > 0 && utf8.FullRune(l.pend[:l.pendN]) {
			l.decodePend()
		}
	}
}

// decodePend decodes one rune from the start of pend, as encoding/json
// does: an invalid byte becomes U+FFFD.
func (l *lexer) decodePend() {
	r, size := utf8.DecodeRune(l.pend[:l.pendN])
	if r == utf8.RuneError && size == 1 {
		l.emitRune(utf8.RuneError)
	} else {
		l.emit(l.pend[:size])
	}
	l.pendN = copy(l.pend[:], l.pend[size:l.pendN])
}

// flushPend decodes an incomplete UTF-8 sequence cut short by what follows.
func (l *lexer) flushPend() {
	for l.pendN > 0 {
		l.decodePend()
	}
}

// flushHigh emits a high surrogate that no low surrogate followed.
func (l *lexer) flushHigh() {
	if l.high != 0 {
		l.high = 0
		l.emitRune(utf8.RuneError)
	}
}

func (l *lexer) endString() {
	if l.isKey {
		l.h.key(l.capt[:l.captN], !l.captOver)
		l.st = lsColon
		return
	}
	l.h.str(l.strLen, l.capt[:l.captN], !l.captOver)
	l.afterValue()
}

func (l *lexer) escapeByte(c byte) {
	var d byte
	switch c {
	case 'u':
		l.st, l.hex, l.hexN = lsHex, 0, 0
		return
	case '"', '\\', '/':
		d = c
	case 'b':
		d = '\b'
	case 'f':
		d = '\f'
	case 'n':
		d = '\n'
	case 'r':
		d = '\r'
	case 't':
		d = '\t'
	default:
		l.st = lsError
		return
	}
	l.flushHigh()
	l.emit([]byte{d})
	l.st = lsString
}

func (l *lexer) hexByte(c byte) {
	var v rune
	switch {
	case c >= '0' && c <= '9':
		v = rune(c - '0')
	case c >= 'a' && c <= 'f':
		v = rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		v = rune(c - 'A' + 10)
	default:
		l.st = lsError
		return
	}
	l.hex, l.hexN = l.hex<<4|v, l.hexN+1
	if l.hexN == 4 {
		l.st = lsString
		l.unicodeEscape(l.hex)
	}
}

// unicodeEscape decodes \uXXXX as encoding/json does: a high surrogate
// directly followed by an escaped low one is one rune; any other surrogate
// is U+FFFD.
func (l *lexer) unicodeEscape(r rune) {
	const highLo, lowLo, lowHi = 0xD800, 0xDC00, 0xDFFF
	isLow := r >= lowLo && r <= lowHi
	if l.high != 0 {
		if isLow {
			l.emitRune((l.high-highLo)<<10 | (r - lowLo) + 0x10000)
			l.high = 0
			return
		}
		l.flushHigh()
	}
	switch {
	case r >= highLo && r < lowLo:
		l.high = r
	case isLow:
		l.emitRune(utf8.RuneError)
	default:
		l.emitRune(r)
	}
}

// numberByte advances the number grammar; it returns false, leaving c to
// the next state, when c ends the number.
func (l *lexer) numberByte(c byte) bool {
	digit := c >= '0' && c <= '9'
	switch l.numSt {
	case nMinus:
		switch {
		case c == '0':
			l.numSt = nZero
		case digit:
			l.numSt, l.numV = nInt, int64(c-'0')
		default:
			l.st = lsError
		}
		return true
	case nZero, nInt:
		switch {
		case digit && l.numSt == nInt:
			l.addDigit(c)
		case c == '.':
			l.numSt, l.numInt = nDot, false
		case c == 'e' || c == 'E':
			l.numSt, l.numInt = nE, false
		default:
			return l.endOrFail()
		}
	case nDot, nFrac:
		switch {
		case digit:
			l.numSt = nFrac
		case (c == 'e' || c == 'E') && l.numSt == nFrac:
			l.numSt = nE
		default:
			return l.endOrFail()
		}
	case nE, nESign:
		switch {
		case digit:
			l.numSt = nExp
		case (c == '+' || c == '-') && l.numSt == nE:
			l.numSt = nESign
		default:
			l.st = lsError
		}
	case nExp:
		if !digit {
			return l.endOrFail()
		}
	}
	return true
}

// addDigit accumulates an integer, saturating far above any token count.
func (l *lexer) addDigit(c byte) {
	const ceiling = 1 << 53
	if l.numV < ceiling {
		l.numV = l.numV*10 + int64(c-'0')
	}
}

func (l *lexer) numEnds() bool {
	switch l.numSt {
	case nZero, nInt, nFrac, nExp:
		return true
	}
	return false
}

// endOrFail ends the number before a byte that is not part of it.
func (l *lexer) endOrFail() bool {
	if !l.numEnds() {
		l.st = lsError
		return true
	}
	l.endNumber()
	return false
}

func (l *lexer) endNumber() {
	v := l.numV
	if l.numNeg {
		v = -v
	}
	l.h.num(v, l.numInt)
	l.afterValue()
}
