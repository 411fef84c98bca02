package provider

import (
	"encoding/binary"
	"math/bits"
)

// ChunkEnvelope is ScanChunk for the chunks of one stream, which open with the same bytes (a
// chat chunk's id, object, created, model and fingerprint: some 150 bytes of its 250): what
// the keys that start in the bytes a chunk shares with the stream's recorded chunk say was
// read there once, and only the rest of the chunk is looked at. A key's candidate (a quote
// and e, u or m) is a function of the bytes from its quote to the byte that decided it
// (the key's last byte, or a usage key's brace or the byte that is not one), so a chunk that
// shares those bytes has the same candidate there with the same answer. FuzzChunkEnvelope
// keeps it to ScanChunk on every pair of chunks.
type ChunkEnvelope struct {
	n      int // bytes of head recorded
	shared int // how many of them the last chunk shared
	head   [chunkEnvelopeMax]byte
	nc     int // candidates recorded; -1: more than cands holds
	cands  [8]chunkCandidate
}

// chunkCandidate is a candidate key of the recorded chunk: at p, decided by the bytes up to
// end (excluded), and what it found.
type chunkCandidate struct {
	p, end int32
	keys   ChunkKeys // Error, Usage, or Model (p's), as this candidate alone finds them
}

// chunkEnvelopeMax bounds the opening bytes an envelope holds.
const chunkEnvelopeMax = 192

// Scan is ScanChunk(data).
func (e *ChunkEnvelope) Scan(data []byte) ChunkKeys {
	// The bytes the last chunk shared are compared at once (memequal) and only the rest a
	// byte at a time: most chunks share as many as the last.
	c := 0
	if l := e.shared; l <= len(data) && string(data[:l]) == string(e.head[:l]) {
		c = l + commonPrefix(data[l:], e.head[l:e.n])
	} else {
		c = commonPrefix(data, e.head[:e.n])
	}
	e.shared = c
	if c < chunkEnvelopeMin || e.nc < 0 {
		// A chunk of another shape (or the first): scanned whole, and recorded.
		e.n, e.nc, e.shared = copy(e.head[:], data), 0, 0
		return scanChunk(data, 0, false, e)
	}
	// The candidates decided within the shared bytes say what they said; the first one
	// that looked further (and everything from the last byte shared on) is scanned again.
	k := ChunkKeys{Model: -1}
	from := c - 1 // a candidate from here on has its letter past the shared bytes
	for _, cd := range e.cands[:e.nc] {
		if int(cd.p) >= from {
			break
		}
		if int(cd.end) > c {
			from = int(cd.p)
			break
		}
		k.Error = k.Error || cd.keys.Error
		k.Usage = k.Usage || cd.keys.Usage
		if k.Model < 0 {
			k.Model = cd.keys.Model
		}
	}
	rest := scanChunk(data, from, false, nil)
	k.Error = k.Error || rest.Error
	k.Usage = k.Usage || rest.Usage
	if k.Model < 0 {
		k.Model = rest.Model
	}
	return k
}

// chunkEnvelopeMin is the least a chunk must share with the recorded one to start after it;
// below, it is scanned whole and becomes the recorded one.
const chunkEnvelopeMin = 32

// record notes the candidate at data[p] (a quote, then e, u or m): what it finds and the
// bytes it reads to find it.
func (e *ChunkEnvelope) record(data []byte, p int) {
	if e.nc < 0 {
		return
	}
	if e.nc == len(e.cands) {
		e.nc = -1 // too many: the next chunk is scanned whole
		return
	}
	cd := chunkCandidate{p: int32(p), keys: ChunkKeys{Model: -1}}
	rest := data[p:]
	key := keyModelValue
	switch rest[1] {
	case 'e':
		key = keyError
	case 'u':
		key = keyUsage
	}
	// A look cut short by the chunk's end is decided by that end, which no other chunk
	// shares (one that goes on may find the key): end past the chunk.
	cd.end = int32(len(data) + 1)
	if len(rest) >= len(key) {
		cd.end = int32(p + len(key))
		if string(rest[:len(key)]) == string(key) {
			switch rest[1] {
			case 'm':
				cd.keys.Model = p + len(key)
			case 'e':
				cd.keys.Error = true
			case 'u':
				ok, at := objectValueAt(rest[len(key):])
				cd.keys.Usage = ok
				cd.end = int32(p + len(key) + at + 1) // through the byte that decided
				if at == len(rest)-len(key) {
					cd.end = int32(len(data) + 1)
				}
			}
		}
	}
	e.cands[e.nc] = cd
	e.nc++
}

// commonPrefix is the length of the longest prefix a and b share.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}
