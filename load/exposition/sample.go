package exposition

import "strconv"

// sample is one sample line of the text format, as far as the rewrite
// needs it: name, labels, where the value is.
type sample struct {
	name string
	// labels holds the raw label pairs, values still escaped.
	labels [][2]string
	// valueStart and valueEnd delimit the value in the line.
	valueStart, valueEnd int
}

// parseSample reads a sample line: name, optional {labels}, blanks, value,
// optional timestamp. It reports false for anything else (comments, blank
// lines, malformed lines, names in the quoted UTF-8 form), which the
// rewrite then copies as it is.
func parseSample(line []byte) (sample, bool) {
	var s sample
	i := skipBlanks(line, 0)
	start := i
	for i < len(line) && isNameByte(line[i]) {
		i++
	}
	if i == start || line[start] == '#' {
		return s, false
	}
	s.name = string(line[start:i])
	if i < len(line) && line[i] == '{' {
		var ok bool
		if s.labels, i, ok = parseLabels(line, i+1); !ok {
			return s, false
		}
	}
	j := skipBlanks(line, i)
	if j == i || j >= len(line) {
		return s, false
	}
	s.valueStart = j
	for j < len(line) && !isBlank(line[j]) && line[j] != '\n' && line[j] != '\r' {
		j++
	}
	s.valueEnd = j
	return s, true
}

// parseLabels reads label pairs from just after '{' through '}' and
// returns them and the index after '}'.
func parseLabels(line []byte, i int) ([][2]string, int, bool) {
	var labels [][2]string
	for {
		i = skipBlanks(line, i)
		if i >= len(line) {
			return nil, i, false
		}
		if line[i] == '}' {
			return labels, i + 1, true
		}
		start := i
		for i < len(line) && isNameByte(line[i]) && line[i] != ':' {
			i++
		}
		name := string(line[start:i])
		i = skipBlanks(line, i)
		if name == "" || i >= len(line) || line[i] != '=' {
			return nil, i, false
		}
		i = skipBlanks(line, i+1)
		if i >= len(line) || line[i] != '"' {
			return nil, i, false
		}
		value, next, ok := quoted(line, i+1)
		if !ok {
			return nil, next, false
		}
		labels = append(labels, [2]string{name, value})
		i = skipBlanks(line, next)
		if i < len(line) && line[i] == ',' {
			i++
		}
	}
}

// quoted reads an escaped label value from just after its opening quote
// and returns it raw (escapes kept) and the index after the closing quote.
func quoted(line []byte, i int) (string, int, bool) {
	start := i
	for i < len(line) {
		switch line[i] {
		case '\\':
			i += 2
			continue
		case '"':
			return string(line[start:i]), i + 1, true
		case '\n':
			return "", i, false
		}
		i++
	}
	return "", i, false
}

// rank is the DP rank the sample's label names: 0 when the label is
// absent (an engine with one rank leaves it out), -1 when it is not a
// whole number or there is no rank label.
func (s sample) rank(label string) int {
	if label == "" {
		return -1
	}
	for _, l := range s.labels {
		if l[0] == label {
			n, err := strconv.Atoi(l[1])
			if err != nil || n < 0 {
				return -1
			}
			return n
		}
	}
	return 0
}

func isNameByte(c byte) bool {
	return c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func skipBlanks(line []byte, i int) int {
	for i < len(line) && isBlank(line[i]) {
		i++
	}
	return i
}
