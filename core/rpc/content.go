package rpc

// envelope is where contentBytes' walk of a stream's last passthrough chunk stood after the
// chunk's opening bytes (a chat chunk's id, object, created, model and fingerprint, the same
// in every chunk of a stream), so that the walk of the next chunk that opens with the same
// bytes starts there: the walk is a function of the bytes it has looked at alone, so a chunk
// with those same bytes reaches the same place with the same count. A chat chunk's envelope
// is half its strings, each a stringEnd of contentBytes; one comparison of some 150 bytes
// stands for them. FuzzEnvelope keeps it to contentBytes on every pair of chunks.
type envelope struct {
	n     int               // the bytes of head a chunk must open with; 0: none recorded
	at    int               // the walk's position then (a string's opening quote)
	count int64             // and its count
	head  [envelopeMax]byte // the chunk's opening bytes
}

// envelopeMax bounds the opening bytes an envelope holds (a chat chunk's is some 150).
const envelopeMax = 192

// contentBytes is contentBytes(data), starting where the last chunk's walk stood when data
// opens with the bytes that took it there, and recording where this one's stands otherwise.
func (e *envelope) contentBytes(data []byte) int64 {
	if e.n > 0 && len(data) >= e.n && string(data[:e.n]) == string(e.head[:e.n]) {
		n, _, _ := contentWalk(data, e.at, e.count, false)
		return n
	}
	n, at, count := contentWalk(data, 0, 0, true)
	e.n = 0
	if at >= 0 {
		e.n, e.at, e.count = copy(e.head[:], data[:at+1]), at, count
	}
	return n
}
