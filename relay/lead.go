package relay

// Lead returns how many of p's bytes, the first bytes of a chunked body,
// are whole chunks that do not end it. A caller may write those bytes to
// the client with the answer's head, before the relay has the stream,
// give their data to its counting (LeadData), and give the relay only
// the rest as Pending: the relay's framing then starts on a chunk's size
// line, as at a body's start, and the first event that came with the
// head does not wait for a loop to take the stream. A chunk cut short,
// the last chunk and anything after it are left to the relay, which ends
// the body, checks its framing and reports its end.
func Lead(p []byte) int {
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

// LeadData gives data the chunks' data in lead, the bytes Lead took, as
// the relay gives a stream's (Stream.OnData).
func LeadData(lead []byte, data func([]byte)) {
	var c chunkParser
	_, _ = c.feed(lead, data) // whole chunks that Lead framed: no error
}
