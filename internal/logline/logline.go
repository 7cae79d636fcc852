package logline

import (
	"time"

	"go.uber.org/zap/buffer"
	"go.uber.org/zap/zapcore"
)

// JSONFields is a log line's fields that write themselves as zap's JSON
// encoder writes them, given as the line's only field, zap.Inline: the
// access log's, one line per request. zap's encoder, general as it must
// be, costs a request about a microsecond (BENCHMARKS.md); a line of a
// fixed shape needs none of its generality.
type JSONFields interface {
	zapcore.ObjectMarshaler
	// AppendJSONFields appends the fields as MarshalLogObject would have
	// zap's JSON encoder write them ("key":value, joined by commas), and
	// reports true; or reports false when a value is one only zap's
	// encoder writes (a string to escape, a duration past AppendSeconds'
	// bound): what it appended is dropped, and zap's encoder writes the
	// line.
	AppendJSONFields(buf *buffer.Buffer) bool
}

// Plain reports whether zap's JSON encoder writes s as it is: printable
// ASCII but for '"' and '\' (and DEL, which it leaves too).
func Plain(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// exactSeconds bounds the durations AppendSeconds writes: below 2^52
// nanoseconds (52 days) a duration is a float's exact integer, its
// quotient by 1e9 (correctly rounded) is the float nearest to its
// decimal, and floats there are closer together than a nanosecond, so
// that no shorter decimal reads back as the same float.
const exactSeconds = 1 << 52

// AppendSeconds appends d in seconds as zapcore.SecondsDurationEncoder has
// zap's JSON encoder write it (strconv's shortest 'f' form of
// d/time.Second as a float64): the exact decimal, with no trailing zeros.
// It reports false, having appended nothing, for a duration of 2^52
// nanoseconds or more, either way.
func AppendSeconds(buf *buffer.Buffer, d time.Duration) bool {
	if d >= exactSeconds || d <= -exactSeconds {
		return false
	}
	if d < 0 {
		buf.AppendByte('-')
		d = -d
	}
	buf.AppendInt(int64(d / time.Second))
	frac := int64(d % time.Second)
	if frac == 0 {
		return true
	}
	var digits [10]byte
	digits[0] = '.'
	for i := 9; i >= 1; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 10
	for digits[n-1] == '0' {
		n--
	}
	buf.AppendBytes(digits[:n])
	return true
}
