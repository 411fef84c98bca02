package strictjson

import (
	"bytes"
	"io"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Reader reads a JSON text token by token with the tokenizer Check uses, for the one-pass
// readers of the bodies every request has (a chat request, an answer's usage, a stream's
// events) that leave anything unusual to a general decoder. It checks what it reads as Check
// does (valid UTF-8 and escapes, no name twice in an object, at any depth), so a reader that
// ends with End accepts only what Check accepts, and may take text nobody has checked. A
// method that finds another shape, or a fault, reports false, and the caller gives up.
type Reader struct {
	d    jsontext.Decoder
	src  bytes.Buffer // the text: the decoder reads it in place, without a copy
	name []byte       // a name with escapes, decoded
}

// readers keeps decoders, whose name sets and stacks are worth keeping between texts.
var readers = sync.Pool{New: func() any { return new(Reader) }}

// NewReader reads data; Done gives the Reader back.
func NewReader(data []byte) *Reader {
	r := readers.Get().(*Reader)
	r.src = *bytes.NewBuffer(data)
	r.d.Reset(&r.src)
	return r
}

// Done gives r back; what Raw returned is data's own and stays. (The pooled decoder still
// points at data until its next text: a pool holds nothing across two collections.)
func (r *Reader) Done() {
	r.src = bytes.Buffer{}
	readers.Put(r)
}

// Kind is the kind of the next value ('n', 't', 'f', '"', '0', '{', '['), 0 at a fault or
// the end.
func (r *Reader) Kind() jsontext.Kind { return r.d.PeekKind() }

// Object reads an object, calling field with each member's name (escapes decoded; the bytes
// are valid until the next name is read, in field too) when the reader is at the member's
// value, which field must read.
func (r *Reader) Object(field func(name []byte) bool) bool {
	if t, err := r.d.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for r.d.PeekKind() == '"' {
		v, err := r.d.ReadValue()
		if err != nil {
			return false
		}
		name := v[1 : len(v)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if r.name, err = jsontext.AppendUnquote(r.name[:0], v); err != nil {
				return false
			}
			name = r.name
		}
		if !field(name) {
			return false
		}
		// field must read the value: an odd count of names and values means it did not.
		if _, n := r.d.StackIndex(r.d.StackDepth()); n%2 != 0 {
			return false
		}
	}
	t, err := r.d.ReadToken()
	return err == nil && t.Kind() == '}'
}

// Array reads an array, calling elem at each element, which elem must read.
func (r *Reader) Array(elem func() bool) bool {
	if t, err := r.d.ReadToken(); err != nil || t.Kind() != '[' {
		return false
	}
	for k := r.d.PeekKind(); k != ']'; k = r.d.PeekKind() {
		if k == 0 || !elem() {
			return false
		}
	}
	_, err := r.d.ReadToken()
	return err == nil
}

// String reads a string.
func (r *Reader) String() (string, bool) {
	if r.d.PeekKind() != '"' {
		return "", false
	}
	v, err := r.d.ReadValue() // checked as ReadToken checks it
	if err != nil || len(v) < 2 {
		return "", false
	}
	raw := v[1 : len(v)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		t, err := jsontext.AppendUnquote(nil, v)
		return string(t), err == nil
	}
	if w, ok := knownWords[string(raw)]; ok { // the lookup does not allocate
		return w, true
	}
	return string(raw), true
}

// knownWords are the values the protocols' enumerations take (event types, roles, stop
// reasons): every stream and most requests read several, which then cost no allocation.
var knownWords = func() map[string]string {
	words := []string{
		// messages (Anthropic) stream events and their values
		"message_start", "message_delta", "message_stop", "content_block_start", "content_block_delta",
		"content_block_stop", "ping", "error", "message", "assistant", "user", "text", "text_delta",
		"input_json_delta", "thinking", "thinking_delta", "signature_delta", "tool_use", "tool_result",
		"end_turn", "max_tokens", "stop_sequence", "pause_turn", "refusal", "standard", "priority",
		// chat completions
		"system", "developer", "tool", "function", "image_url", "auto", "none", "required",
		"stop", "length", "tool_calls", "content_filter", "chat.completion", "chat.completion.chunk",
	}
	m := make(map[string]string, len(words))
	for _, w := range words {
		m[w] = w
	}
	return m
}()

// Bool reads true or false.
func (r *Reader) Bool() (bool, bool) {
	t, err := r.d.ReadToken()
	if err != nil || t.Kind() != 't' && t.Kind() != 'f' {
		return false, false
	}
	return t.Bool(), true
}

// Null reads null, if null is next.
func (r *Reader) Null() bool {
	if r.d.PeekKind() != 'n' {
		return false
	}
	_, err := r.d.ReadToken()
	return err == nil
}

// Integer reads a number written as an integer that fits bits bits: what Unmarshal (and
// encoding/json) decode into a signed integer of that size. A fraction or an exponent is
// refused.
func (r *Reader) Integer(bits int) (int64, bool) {
	v, ok := r.number()
	if !ok {
		return 0, false
	}
	// By hand: strconv.ParseInt's generality is a third of the time of a usage object.
	neg := v[0] == '-'
	if neg {
		v = v[1:]
	}
	limit := uint64(1)<<(bits-1) - 1 // the largest value; one more when negative
	if neg {
		limit++
	}
	var n uint64
	for _, c := range v {
		d := uint64(c - '0')
		if d > 9 || n > (limit-d)/10 {
			return 0, false // a fraction, an exponent, or out of range
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n-1) - 1, true // -limit fits only so
	}
	return int64(n), true
}

// Float reads a number as Unmarshal decodes it into a float64 (out of range is refused).
func (r *Reader) Float() (float64, bool) {
	v, ok := r.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(v), 64)
	return f, err == nil
}

func (r *Reader) number() (jsontext.Value, bool) {
	if r.d.PeekKind() != '0' {
		return nil, false
	}
	v, err := r.d.ReadValue()
	return v, err == nil
}

// Raw reads any value and returns its bytes, as a json.RawMessage member keeps them: a
// slice of the text itself (the decoder reads it in place), capped so that an append cannot
// write into the text.
func (r *Reader) Raw() ([]byte, bool) {
	v, err := r.d.ReadValue()
	return v, err == nil
}

// Skip reads any value.
func (r *Reader) Skip() bool { return r.d.SkipValue() == nil }

// End tells whether the text ends after the value read.
func (r *Reader) End() bool {
	_, err := r.d.ReadToken()
	return err == io.EOF
}
