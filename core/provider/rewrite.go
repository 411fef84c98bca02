package provider

// Passthrough bodies are rewritten in place, never re-encoded: the client's bytes go upstream
// with only the model changed, and the upstream's bytes come back with only the model changed.

import (
	"bytes"
	"encoding/json"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// SetModel rewrites the top-level "model" of a JSON body for passthrough, leaving every other
// byte as the client sent it.
func SetModel(body []byte, model string) ([]byte, error) {
	return SetModelRoom(body, model, 0)
}

// SetModelRoom is SetModel whose result, a new slice the caller owns (never body itself),
// has room more bytes of capacity where the usual splice made it: for a caller that adds to
// the body after (a streamed passthrough's stream_options), in the same allocation.
func SetModelRoom(body []byte, model string, room int) ([]byte, error) {
	// The usual case, a top-level "model" string and a plain model id, is one splice: what
	// sjson writes for it, without parsing the path and the value again.
	if plainJSONString(model) {
		if m := topModel(body); m.Type == gjson.String && m.Index > 0 && m.Index+len(m.Raw) <= len(body) {
			return spliceStringRoom(body, m, model, room), nil
		}
	}
	out, err := sjson.SetBytes(body, "model", model)
	if err != nil {
		return nil, &Error{Message: "the request body is not a JSON object", Err: err}
	}
	return out, nil
}

// PublicModel replaces the first top-level-looking "model" value of a passthrough chunk with
// the public id, so that the client sees the model it asked for even when the provider answers
// with a dated name (gpt-5-mini-2025-08-07 for gpt-5-mini). The chunk is not re-encoded.
func PublicModel(chunk []byte, upstream, public string) []byte {
	start, end, ok := modelValue(chunk, upstream, public)
	if !ok {
		return chunk
	}
	out := make([]byte, 0, len(chunk)+len(public))
	out = append(out, chunk[:start]...)
	out = append(out, public...)
	return append(out, chunk[end:]...)
}

// modelValue is where PublicModel replaces chunk's model (chunk[start:end]); ok false when it
// leaves the chunk as it is.
func modelValue(chunk []byte, upstream, public string) (start, end int, ok bool) {
	if upstream == public || upstream == "" {
		return 0, 0, false
	}
	return modelAt(chunk, scanChunk(chunk, 0, true, nil).Model, upstream, public)
}

// modelAt is modelValue for a chunk whose first `"model":"` ends at start (ChunkKeys.Model;
// -1: none).
func modelAt(chunk []byte, start int, upstream, public string) (int, int, bool) {
	if upstream == public || upstream == "" || start < 0 {
		return 0, 0, false
	}
	n := bytes.IndexByte(chunk[start:], '"')
	if n < 0 || string(chunk[start:start+n]) == public {
		return 0, 0, false
	}
	return start, start + n, true
}

// Chunks is a passthrough stream's PublicModel: the rewritten chunks of one stream share
// blocks instead of costing an allocation each (every chunk of a chat stream names its
// model). A block is never written again where it has handed out a chunk, so a chunk may be
// kept (a held usage chunk) while later ones are rewritten.
type Chunks struct {
	block []byte
}

// chunkBlock is the size of a block: a few dozen chat chunks. A stream's first block is
// firstChunkBlock: a short answer (the 23 chunks, 5 KiB, of a 20-word one) then takes 6 KiB
// in two blocks instead of 8, and a stream waiting after its first chunks holds 2 KiB.
const (
	chunkBlock      = 4 << 10
	firstChunkBlock = 2 << 10
)

// PublicModel is PublicModel(chunk, upstream, public), in c's blocks.
func (c *Chunks) PublicModel(chunk []byte, upstream, public string) []byte {
	start, end, ok := modelValue(chunk, upstream, public)
	if !ok {
		return chunk
	}
	n := len(chunk) - (end - start) + len(public)
	if n > chunkBlock/4 { // a large chunk would waste most of a block
		return PublicModel(chunk, upstream, public)
	}
	if len(c.block)+n > cap(c.block) {
		size := chunkBlock
		if c.block == nil {
			size = firstChunkBlock
		}
		c.block = make([]byte, 0, size)
	}
	b := len(c.block)
	c.block = append(append(append(c.block, chunk[:start]...), public...), chunk[end:]...)
	return c.block[b:len(c.block):len(c.block)] // capped: an append cannot reach the next chunk
}

// Lent is a streamed passthrough's chunks and events lent to the stream's consumer until
// its next event, instead of a copy and an event of their own per chunk (Chunks, Natives):
// for a stream whose reader lends its read buffer (SSEStream.BorrowData) and whose consumer
// (core's Generate: the front's encoder writes each chunk out, or copies the one it holds)
// is done with an event before it asks for the next. A chunk keeps its bytes where no model
// is renamed; a renamed one is written into one buffer, used again for every chunk. The
// zero value is ready; Room gives it a first buffer.
type Lent struct {
	buf []byte
	ev  nativeEvent
}

// Room makes b (empty, with its capacity) the renamed chunks' buffer, in memory the caller
// holds; a longer chunk grows it.
func (l *Lent) Room(b []byte) { l.buf = b[:0] }

// Event is NativeEvent(name, PublicModel(chunk, upstream, public)), valid until the next call.
func (l *Lent) Event(name string, chunk []byte, upstream, public string) *corev1.GenerateEvent {
	if upstream == public || upstream == "" {
		return l.ev.of(name, chunk)
	}
	return l.EventKeys(name, chunk, scanChunk(chunk, 0, true, nil), upstream, public)
}

// EventKeys is Event for a chunk whose keys the caller has scanned already (ScanChunk): one
// pass over the chunk for the decoder's looks and the model's.
func (l *Lent) EventKeys(name string, chunk []byte, k ChunkKeys, upstream, public string) *corev1.GenerateEvent {
	if start, end, ok := modelAt(chunk, k.Model, upstream, public); ok {
		l.buf = append(append(append(l.buf[:0], chunk[:start]...), public...), chunk[end:]...)
		chunk = l.buf[:len(l.buf):len(l.buf)]
	}
	return l.ev.of(name, chunk)
}

// PublicAnswerModel is PublicModel for a whole JSON answer: it finds the top-level "model"
// however the upstream spaced its JSON (OpenAI indents whole answers), and leaves every other
// byte alone.
func PublicAnswerModel(answer []byte, upstream, public string) []byte {
	m := topModel(answer)
	if upstream == public || m.Type != gjson.String || m.Index <= 0 || m.String() == public {
		return answer
	}
	return spliceString(answer, m, public)
}

// RenameAnswerModel is PublicAnswerModel writing into answer itself when its capacity has
// room (ReadAll leaves answerRoom): the answer is the caller's own, read by no one before,
// and what the caller reads of it (its id, its usage) it reads from the result. A copy of
// the whole answer per non-streamed passthrough request otherwise.
func RenameAnswerModel(answer []byte, upstream, public string) []byte {
	m := topModel(answer)
	if upstream == public || m.Type != gjson.String || m.Index <= 0 || m.String() == public {
		return answer
	}
	start, end := m.Index, m.Index+len(m.Raw)
	n := len(answer) - (end - start) + len(public) + 2
	if !plainJSONString(public) || end > len(answer) || n > cap(answer) {
		return spliceString(answer, m, public)
	}
	out := answer[:n]
	copy(out[start+len(public)+2:], answer[end:]) // a memmove: the ranges may overlap
	out[start] = '"'
	copy(out[start+1:], public)
	out[start+1+len(public)] = '"'
	return out
}

// topModel is the top-level "model" of a JSON body, read in place: gjson.GetBytes copies
// the value's text (an allocation per call, two per passthrough request and answer). The
// result points into body: its callers read it and let it go before body changes.
func topModel(body []byte) gjson.Result { return inPlace(body, "model") }

// inPlace is gjson.GetBytes without its copies: the result's Raw and Str point into body.
func inPlace(body []byte, path string) gjson.Result {
	if len(body) == 0 {
		return gjson.Result{}
	}
	return gjson.Get(unsafe.String(&body[0], len(body)), path)
}

// RawField is the JSON text of the value at path in body, a slice of body itself (nil when
// absent): what json.RawMessage(gjson.GetBytes(body, path).Raw) gives, without its two copies.
func RawField(body []byte, path string) []byte {
	r := inPlace(body, path)
	switch {
	case !r.Exists():
		return nil
	case r.Index > 0 && r.Index+len(r.Raw) <= len(body):
		return body[r.Index : r.Index+len(r.Raw) : r.Index+len(r.Raw)]
	}
	return []byte(r.Raw) // a value gjson built (a modifier's): not in body
}

// spliceString is body with its value m (found by gjson in body) replaced by s as a JSON
// string, quoted as encoding/json quotes it.
func spliceString(body []byte, m gjson.Result, s string) []byte {
	return spliceStringRoom(body, m, s, 0)
}

// spliceStringRoom is spliceString with room more bytes of capacity.
func spliceStringRoom(body []byte, m gjson.Result, s string, room int) []byte {
	out := make([]byte, 0, len(body)-len(m.Raw)+len(s)+2+room)
	out = append(out, body[:m.Index]...)
	if plainJSONString(s) {
		out = append(out, '"')
		out = append(out, s...)
		out = append(out, '"')
	} else {
		quoted, _ := json.Marshal(s) // a string always encodes
		out = append(out, quoted...)
	}
	return append(out, body[m.Index+len(m.Raw):]...)
}

// plainJSONString reports whether s is written as itself between quotes by encoding/json
// and by sjson alike: printable ASCII without quote, backslash or the characters
// encoding/json escapes for HTML. Model ids are.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
