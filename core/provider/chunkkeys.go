package provider

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// ChunkKeys is what a passthrough decoder looks for in every streamed chunk, found in one
// pass over its bytes (ScanChunk). Each is the same textual look as before (bytes.Contains,
// bytes.Index): what the gateway reads of a chunk (an error, the usage, the model it renames)
// is still read by gjson or in place after these gates, as before.
type ChunkKeys struct {
	// Error: the chunk has `"error"` somewhere (bytes.Contains).
	Error bool
	// Usage: some `"usage"` is followed by JSON whitespace, a colon, whitespace and an
	// object's brace (every chunk of an include_usage stream has "usage":null, which then
	// costs no parse).
	Usage bool
	// Model is the index just after the chunk's first `"model":"` (bytes.Index), -1 when
	// it has none: where modelValue's value starts.
	Model int
}

// ScanChunk finds a chunk's ChunkKeys. Every key it looks for starts with a quote and one
// of three letters, and it looks at eight positions at a time for that pair: bytes.Index
// with a needle that starts with a quote falls, in JSON full of quotes, to a byte search
// that stops at every quote (some 200 ns for each of the three looks at a 270-byte chat
// chunk, most of a passthrough chunk's cost in the decoder). FuzzScanChunk keeps it to the
// three looks it replaces.
func ScanChunk(data []byte) ChunkKeys {
	return scanChunk(data, 0, false, nil)
}

// scanChunk is ScanChunk of the keys that start at from or after; modelOnly stops at the
// first `"model":"` and leaves the other keys unread (modelValue's look). rec, when set,
// records the candidates that start in its head's reach (ChunkEnvelope).
func scanChunk(data []byte, from int, modelOnly bool, rec *ChunkEnvelope) ChunkKeys {
	k := ChunkKeys{Model: -1}
	j := from
	// Candidates: a quote at p and one of e, u, m at p+1. x0 holds bytes j..j+7 and x1
	// bytes j+1..j+8: lane i of x0 is data[j+i], lane i of x1 the byte after it.
	for ; j+9 <= len(data); j += 8 {
		x0 := binary.LittleEndian.Uint64(data[j:])
		x1 := binary.LittleEndian.Uint64(data[j+1:])
		// e and u differ in one bit (0x65, 0x75): one test takes both. A lane is a
		// candidate where none of its three tests' nonzero flags stops it.
		q := nonzero(x0 ^ (lo8 * '"'))
		eu := nonzero((x1 | lo8*0x10) ^ (lo8 * 'u'))
		mm := nonzero(x1 ^ (lo8 * 'm'))
		m := ^(q | eu&mm) & hi8
		for m != 0 {
			p := j + bits.TrailingZeros64(m)/8
			m &= m - 1
			if rec != nil && p < len(rec.head) {
				rec.record(data, p)
			}
			if k.candidate(data, p, modelOnly) {
				return k
			}
		}
	}
	for ; j+1 < len(data); j++ {
		if data[j] == '"' {
			if c := data[j+1]; c == 'e' || c == 'u' || c == 'm' {
				if rec != nil && j < len(rec.head) {
					rec.record(data, j)
				}
				if k.candidate(data, j, modelOnly) {
					return k
				}
			}
		}
	}
	return k
}

// candidate reads the key that may start at data[p] (a quote, then e, u or m); true when the
// scan is done.
func (k *ChunkKeys) candidate(data []byte, p int, modelOnly bool) bool {
	rest := data[p:]
	switch rest[1] {
	case 'm':
		if k.Model < 0 && bytes.HasPrefix(rest, keyModelValue) {
			k.Model = p + len(keyModelValue)
			return modelOnly
		}
	case 'e':
		if !modelOnly && !k.Error && bytes.HasPrefix(rest, keyError) {
			k.Error = true
		}
	case 'u':
		if !modelOnly && !k.Usage && bytes.HasPrefix(rest, keyUsage) {
			k.Usage = objectValue(rest[len(keyUsage):])
		}
	}
	return false
}

var (
	keyModelValue = []byte(`"model":"`)
	keyError      = []byte(`"error"`)
	keyUsage      = []byte(`"usage"`)
)

// objectValue: data starts with JSON whitespace, a colon, whitespace and an object's brace.
func objectValue(data []byte) bool {
	ok, _ := objectValueAt(data)
	return ok
}

// objectValueAt is objectValue, and the index of the byte that decided it (len(data): its
// end did).
func objectValueAt(data []byte) (bool, int) {
	colon := false
	for i, c := range data {
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == ':' && !colon:
			colon = true
		case c == '{' && colon:
			return true, i
		default:
			return false, i
		}
	}
	return false, len(data)
}

// nonzero has the high bit of each byte of v that is not zero (and other bits, below the
// high ones, to be masked off): exact, with no borrow from one byte into the next
// ((b&0x7f)+0x7f carries into the high bit alone, and b itself is or-ed in), so that the
// flags of several tests may be combined byte by byte.
func nonzero(v uint64) uint64 {
	return (v&lo7 + lo7) | v
}

const (
	lo8 = 0x0101010101010101
	lo7 = 0x7f7f7f7f7f7f7f7f
	hi8 = 0x8080808080808080
)
