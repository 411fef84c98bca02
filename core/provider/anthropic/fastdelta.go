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

// readIndex reads `head` then a block index; rest follows the index.
func readIndex(data, head []byte) (index int, rest []byte, ok bool) {
	rest, found := bytes.CutPrefix(data, head)
	if !found {
		return 0, nil, false
	}
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
	index, rest, ok := readIndex(data, deltaHead)
	if !ok {
		return 0, "", nil, false
	}
	rest, found := bytes.CutPrefix(rest, deltaMid)
	if !found {
		return 0, "", nil, false
	}
	name, after, found := bytes.Cut(rest, []byte(`","`))
	if !found {
		return 0, "", nil, false
	}
	var field string // the one content key of each delta type
	switch string(name) {
	case mw.DeltaText:
		typ, field = mw.DeltaText, "text"
	case mw.DeltaInputJSON:
		typ, field = mw.DeltaInputJSON, "partial_json"
	case mw.DeltaThinking:
		typ, field = mw.DeltaThinking, "thinking"
	case mw.DeltaSignature:
		typ, field = mw.DeltaSignature, "signature"
	default:
		return 0, "", nil, false
	}
	if len(after) < len(field)+2 || string(after[:len(field)]) != field || after[len(field)] != '"' || after[len(field)+1] != ':' {
		return 0, "", nil, false
	}
	text, next, ok := jsontext.Unquote(after, len(field)+2, buf)
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
