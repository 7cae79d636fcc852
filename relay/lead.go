package relay

// Lead returns how many of p's bytes, the first bytes of a chunked body,
// are whole chunks that do not end it, having given their data to data
// (when not nil). A caller may write those bytes to the client with the
// answer's head, before the relay has the stream, and give the relay
// only the rest as Pending: the relay's framing then starts on a chunk's
// size line, as at a body's start, and the first event that came with
// the head does not wait for a loop to take the stream. A chunk cut
// short, the last chunk and anything after it are left to the relay,
// which ends the body, checks its framing and reports its end.
func Lead(p []byte, data func([]byte)) int {
	n := leadLen(p)
	if data != nil && n > 0 {
		var c chunkParser
		_, _ = c.feed(p[:n], data) // whole chunks that leadLen framed: no error
	}
	return n
}

// leadLen frames p and returns where the last whole chunk before the
// body's end, or a framing error, or p's end, ends.
func leadLen(p []byte) int {
	var c chunkParser
	skip := func([]byte) {}
	n := 0
	for i := 0; i < len(p); {
		k := 1
		if c.st == csData {
			k = int(min(c.left, int64(len(p)-i)))
		}
		if _, err := c.feed(p[i:i+k], skip); err != nil {
			return n
		}
		i += k
		if c.st == csSize && c.digits == 0 {
			n = i // a chunk's data and its CRLF went: the next size line starts
		}
	}
	return n
}
