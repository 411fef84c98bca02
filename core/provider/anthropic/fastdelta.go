package anthropic

import (
	"bytes"

	"modelgateway/core/wire/jsontext"
	mw "modelgateway/core/wire/messageswire"
)

// The API writes every content_block_delta with the same keys in the same order, e.g.
//
//	{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}
//
// Deltas are nearly every event of a stream, so readDelta reads that layout in place;
// anything else (other key order, whitespace, extra keys) takes the general decoder.
var (
	deltaHead = []byte(`{"type":"content_block_delta","index":`)
	deltaMid  = []byte(`,"delta":{"type":"`)
	stopHead  = []byte(`{"type":"content_block_stop","index":`)
	startHead = []byte(`{"type":"content_block_start","index":`)
)

// deltaKinds are the delta types read in place, each with its one content key (text,
// partial_json, thinking or signature): head is what follows deltaMid up to the value's
// opening quote.
var deltaKinds = [...]deltaKind{
	newDeltaKind(mw.DeltaText, "text"), newDeltaKind(mw.DeltaInputJSON, "partial_json"),
	newDeltaKind(mw.DeltaThinking, "thinking"), newDeltaKind(mw.DeltaSignature, "signature"),
}

type deltaKind struct {
	typ  string
	head []byte
}

func newDeltaKind(typ, key string) deltaKind {
	return deltaKind{typ, []byte(typ + `","` + key + `":"`)}
}

// readIndex reads `head` then a block index; rest follows the index.
func readIndex(data, head []byte) (index int, rest []byte, ok bool) {
	rest, found := bytes.CutPrefix(data, head)
	if !found {
		return 0, nil, false
	}
	return readNumber(rest)
}

// A text delta's fixed parts, deltaHead and deltaMid with the text kind's head, compared in
// pieces of at most 16 bytes: the compiler compares a constant that short in two loads,
// where a longer one (or bytes.HasPrefix) is a call of memequal, three per delta.
func hasDeltaHead(b []byte) bool {
	return len(b) >= 38 && string(b[:16]) == `{"type":"content` && string(b[16:32]) == `_block_delta","i` &&
		string(b[32:38]) == `ndex":`
}

func hasTextMid(b []byte) bool {
	return len(b) >= 38 && string(b[:16]) == `,"delta":{"type"` && string(b[16:32]) == `:"text_delta","t` &&
		string(b[32:38]) == `ext":"`
}

// readNumber reads a block index at the start of rest (at most 6 digits, no leading zero).
func readNumber(rest []byte) (index int, after []byte, ok bool) {
	n := 0
	for n < len(rest) && n < 6 && rest[n] >= '0' && rest[n] <= '9' {
		index = index*10 + int(rest[n]-'0')
		n++
	}
	if n == 0 || n > 1 && rest[0] == '0' {
		return 0, nil, false
	}
	return index, rest[n:], true
}

// readTextBlockStart reports whether data is {"type":"content_block_start","index":N,
// "content_block":{"type":"text","text":""}}, the start of every text block.
func readTextBlockStart(data []byte) bool {
	_, rest, ok := readIndex(data, startHead)
	return ok && string(rest) == `,"content_block":{"type":"text","text":""}}`
}

// readBlockStop reads {"type":"content_block_stop","index":N}.
func readBlockStop(data []byte) (int, bool) {
	i, rest, ok := readIndex(data, stopHead)
	return i, ok && string(rest) == "}"
}

// readDelta returns the block index, the delta's type and its one content field's text
// (text, partial_json, thinking or signature), or ok false for the general decoder. The text
// is a slice of data, or of *buf when it had escapes (jsontext.Unquote): copy it before the
// next call.
func readDelta(data []byte, buf *[]byte) (index int, typ string, text []byte, ok bool) {
	if !hasDeltaHead(data) {
		return 0, "", nil, false
	}
	index, rest, ok := readNumber(data[len(deltaHead):])
	if !ok {
		return 0, "", nil, false
	}
	if hasTextMid(rest) { // nearly every delta
		return readDeltaText(index, mw.DeltaText, rest[len(deltaMid)+len(deltaKinds[0].head)-1:], buf)
	}
	rest, found := bytes.CutPrefix(rest, deltaMid)
	if !found {
		return 0, "", nil, false
	}
	// The type and its one content key, `text_delta","text":` for one: a compare per
	// delta type, text first (nearly every delta), where a search for `","` and then the key
	// cost a third of the read.
	k := 0
	for k < len(deltaKinds) && !bytes.HasPrefix(rest, deltaKinds[k].head) {
		k++
	}
	if k == len(deltaKinds) {
		return 0, "", nil, false
	}
	return readDeltaText(index, deltaKinds[k].typ, rest[len(deltaKinds[k].head)-1:], buf)
}

// readDeltaText reads the delta's text from its opening quote (after), then the end "}}".
func readDeltaText(index int, typ string, after []byte, buf *[]byte) (int, string, []byte, bool) {
	text, next, ok := jsontext.Unquote(after, 0, buf)
	if !ok || string(after[next:]) != "}}" {
		return 0, "", nil, false
	}
	return index, typ, text, true
}

// deltaOf is the wire delta of a delta read in place, for the rarer delta types.
func deltaOf(typ, text string) mw.Delta {
	d := mw.Delta{Type: typ}
	switch typ {
	case mw.DeltaText:
		d.Text = text
	case mw.DeltaInputJSON:
		d.PartialJSON = text
	case mw.DeltaThinking:
		d.Thinking = text
	case mw.DeltaSignature:
		d.Signature = text
	}
	return d
}
