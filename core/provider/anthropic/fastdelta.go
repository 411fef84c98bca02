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

// readDelta returns the block index and the delta, or ok false for the general decoder.
func readDelta(data []byte) (index int, d mw.Delta, ok bool) {
	index, rest, ok := readIndex(data, deltaHead)
	if !ok {
		return 0, d, false
	}
	rest, found := bytes.CutPrefix(rest, deltaMid)
	if !found {
		return 0, d, false
	}
	typ, after, found := bytes.Cut(rest, []byte(`","`))
	if !found {
		return 0, d, false
	}
	var field string // the one content key of each delta type
	switch string(typ) {
	case mw.DeltaText:
		d.Type, field = mw.DeltaText, "text"
	case mw.DeltaInputJSON:
		d.Type, field = mw.DeltaInputJSON, "partial_json"
	case mw.DeltaThinking:
		d.Type, field = mw.DeltaThinking, "thinking"
	case mw.DeltaSignature:
		d.Type, field = mw.DeltaSignature, "signature"
	default:
		return 0, d, false
	}
	if len(after) < len(field)+2 || string(after[:len(field)]) != field || after[len(field)] != '"' || after[len(field)+1] != ':' {
		return 0, d, false
	}
	value, next, ok := jsontext.String(after, len(field)+2)
	if !ok || string(after[next:]) != "}}" {
		return 0, d, false
	}
	switch d.Type {
	case mw.DeltaText:
		d.Text = value
	case mw.DeltaInputJSON:
		d.PartialJSON = value
	case mw.DeltaThinking:
		d.Thinking = value
	case mw.DeltaSignature:
		d.Signature = value
	}
	return index, d, true
}
