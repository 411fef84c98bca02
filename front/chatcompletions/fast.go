package chatcompletions

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
)

// decodeRequest is json.Unmarshal(body, in), in one pass without reflection for the requests
// most clients send: a model, messages of a role and a content, and scalar options. Any other
// body, and any body the fast pass is not sure to read as encoding/json does (an unknown or
// repeated key, a null, a number of another form, tools, a stop list), goes through
// encoding/json: the same result, and the same error text.
func decodeRequest(body []byte, in *chatwire.Request) error {
	if json.Valid(body) {
		var fast chatwire.Request
		if d := (fastDecoder{data: body}); d.request(&fast) {
			*in = fast
			return nil
		}
	}
	return json.Unmarshal(body, in)
}

// fastDecoder reads a body that json.Valid accepted, so it only checks what validity does
// not settle: the shape.
type fastDecoder struct {
	data []byte
	i    int
}

func (d *fastDecoder) space() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and tells whether the next byte is c, consuming it if so.
func (d *fastDecoder) next(c byte) bool {
	d.space()
	if d.i < len(d.data) && d.data[d.i] == c {
		d.i++
		return true
	}
	return false
}

// object reads an object, calling field with each key positioned at its value. A key with an
// escape is refused (as a key no field has), not decoded.
func (d *fastDecoder) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		d.space()
		if d.i >= len(d.data) || d.data[d.i] != '"' {
			return false
		}
		start := d.i + 1
		end := start
		for end < len(d.data) && d.data[end] != '"' && d.data[end] != '\\' {
			end++
		}
		if end >= len(d.data) || d.data[end] != '"' {
			return false
		}
		d.i = end + 1
		if !d.next(':') {
			return false
		}
		d.space()
		if !field(d.data[start:end]) {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

func (d *fastDecoder) string() (string, bool) {
	s, next, ok := jsontext.String(d.data, d.i)
	d.i = next
	return s, ok
}

func (d *fastDecoder) bool() (bool, bool) {
	switch {
	case d.literal("true"):
		return true, true
	case d.literal("false"):
		return false, true
	}
	return false, false
}

func (d *fastDecoder) literal(word string) bool {
	if len(d.data)-d.i >= len(word) && string(d.data[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

// number is the number token at d.i (valid JSON: validity was checked).
func (d *fastDecoder) number() string {
	start := d.i
	for d.i < len(d.data) {
		switch c := d.data[d.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			d.i++
		default:
			return string(d.data[start:d.i])
		}
	}
	return string(d.data[start:d.i])
}

// integer reads a number into bits bits as encoding/json does: an integer literal in range;
// anything else (a fraction, an exponent, out of range: errors there) is not read here.
func (d *fastDecoder) integer(bits uint) (int64, bool) {
	neg := d.i < len(d.data) && d.data[d.i] == '-'
	if neg {
		d.i++
	}
	limit := uint64(1)<<(bits-1) - 1 // the largest value; one more when negative
	if neg {
		limit++
	}
	var n uint64
	digits := 0
	for ; d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9'; d.i++ {
		if n > (limit-uint64(d.data[d.i]-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(d.data[d.i]-'0')
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	// A fraction or an exponent may follow: then what follows the value is no ',' or '}',
	// and the object is not read.
	if neg {
		return -int64(n-1) - 1, true // -limit fits only so
	}
	return int64(n), true
}

func (d *fastDecoder) float() (float64, bool) {
	if d.i >= len(d.data) || (d.data[d.i] != '-' && (d.data[d.i] < '0' || d.data[d.i] > '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(d.number(), 64)
	return f, err == nil && !math.IsInf(f, 0)
}

// raw reads any value and returns its bytes, as a json.RawMessage field keeps them (a slice
// of the body, capped so that an append cannot write into it). The body is valid JSON, so
// brackets and quotes balance.
func (d *fastDecoder) raw() json.RawMessage {
	start := d.i
	switch d.data[d.i] {
	case '"':
		d.skipString()
	case '{', '[':
		for depth := 0; d.i < len(d.data); {
			switch d.data[d.i] {
			case '"':
				d.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			d.i++
			if depth == 0 {
				break
			}
		}
	default: // a number or a literal
		for d.i < len(d.data) && !strings.ContainsRune(" \t\r\n,}]", rune(d.data[d.i])) {
			d.i++
		}
	}
	return d.data[start:d.i:d.i]
}

// skipString moves past the string whose opening quote is at d.i.
func (d *fastDecoder) skipString() {
	for d.i++; d.i < len(d.data) && d.data[d.i] != '"'; d.i++ {
		if d.data[d.i] == '\\' {
			d.i++
		}
	}
	d.i++
}

// Fields of a request, as bits: a key seen twice is left to encoding/json.
const (
	fModel = 1 << iota
	fMessages
	fStream
	fStreamOptions
	fMaxCompletionTokens
	fMaxTokens
	fTemperature
	fTopP
	fN
	fPresencePenalty
	fFrequencyPenalty
	fSeed
	fLogprobs
	fTopLogprobs
	fParallelToolCalls
	fReasoningEffort
	fUser
	fSafetyIdentifier
)

func (d *fastDecoder) request(r *chatwire.Request) bool {
	seen := 0
	once := func(f int) bool {
		if seen&f != 0 {
			return false
		}
		seen |= f
		return true
	}
	ok := d.object(func(key []byte) bool {
		switch string(key) {
		case "model":
			var ok bool
			r.Model, ok = d.string()
			return once(fModel) && ok
		case "messages":
			return once(fMessages) && d.messages(r)
		case "stream":
			return once(fStream) && d.boolPtr(&r.Stream)
		case "stream_options":
			return once(fStreamOptions) && d.streamOptions(r)
		case "max_completion_tokens":
			return once(fMaxCompletionTokens) && d.int64Ptr(&r.MaxCompletionTokens)
		case "max_tokens":
			return once(fMaxTokens) && d.int64Ptr(&r.MaxTokens)
		case "seed":
			return once(fSeed) && d.int64Ptr(&r.Seed)
		case "n":
			return once(fN) && d.int32Ptr(&r.N)
		case "top_logprobs":
			return once(fTopLogprobs) && d.int32Ptr(&r.TopLogprobs)
		case "temperature":
			return once(fTemperature) && d.floatPtr(&r.Temperature)
		case "top_p":
			return once(fTopP) && d.floatPtr(&r.TopP)
		case "presence_penalty":
			return once(fPresencePenalty) && d.floatPtr(&r.PresencePenalty)
		case "frequency_penalty":
			return once(fFrequencyPenalty) && d.floatPtr(&r.FrequencyPenalty)
		case "logprobs":
			return once(fLogprobs) && d.boolPtr(&r.Logprobs)
		case "parallel_tool_calls":
			return once(fParallelToolCalls) && d.boolPtr(&r.ParallelToolCalls)
		case "reasoning_effort":
			return once(fReasoningEffort) && d.stringPtr(&r.ReasoningEffort)
		case "user":
			return once(fUser) && d.stringPtr(&r.User)
		case "safety_identifier":
			return once(fSafetyIdentifier) && d.stringPtr(&r.SafetyIdentifier)
		}
		return false
	})
	return ok // and nothing follows: the body is valid JSON
}

func (d *fastDecoder) messages(r *chatwire.Request) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		r.Messages = []chatwire.Message{} // empty, not absent, as encoding/json leaves it
		return true
	}
	for {
		var m chatwire.Message
		var seen [4]bool
		once := func(f int) bool {
			if seen[f] {
				return false
			}
			seen[f] = true
			return true
		}
		d.space()
		ok := d.object(func(key []byte) bool {
			var ok bool
			switch string(key) {
			case "role":
				m.Role, ok = d.string()
				return once(0) && ok
			case "content":
				if d.i < len(d.data) && d.data[d.i] == 'n' {
					return false // null: left to encoding/json
				}
				m.Content = d.raw()
				return once(1)
			case "name":
				m.Name, ok = d.string()
				return once(2) && ok
			case "tool_call_id":
				m.ToolCallID, ok = d.string()
				return once(3) && ok
			}
			return false
		})
		if !ok {
			return false
		}
		r.Messages = append(r.Messages, m)
		if d.next(',') {
			continue
		}
		return d.next(']')
	}
}

func (d *fastDecoder) streamOptions(r *chatwire.Request) bool {
	o := &chatwire.StreamOptions{}
	seen := false
	ok := d.object(func(key []byte) bool {
		if string(key) != "include_usage" || seen {
			return false
		}
		seen = true
		var ok bool
		o.IncludeUsage, ok = d.bool()
		return ok
	})
	r.StreamOptions = o
	return ok
}

func (d *fastDecoder) boolPtr(p **bool) bool {
	b, ok := d.bool()
	*p = &b
	return ok
}

func (d *fastDecoder) stringPtr(p **string) bool {
	s, ok := d.string()
	*p = &s
	return ok
}

func (d *fastDecoder) int64Ptr(p **int64) bool {
	n, ok := d.integer(64)
	*p = &n
	return ok
}

func (d *fastDecoder) int32Ptr(p **int32) bool {
	n, ok := d.integer(32)
	v := int32(n)
	*p = &v
	return ok
}

func (d *fastDecoder) floatPtr(p **float64) bool {
	f, ok := d.float()
	*p = &f
	return ok
}
