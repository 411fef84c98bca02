package anthropic

import (
	"strconv"

	"modelgateway/core/wire/jsontext"
	mw "modelgateway/core/wire/messageswire"
)

// message_start and message_delta come once per stream, but encoding/json's reflection over
// the whole StreamEvent made them (with a text block's content_block_start) 40 % of the
// decoder's time on a 20-word answer. readStreamEvent reads them in one pass (json.go: each
// value is checked as it is read, the ones it skips too) into the same StreamEvent. It only
// accepts what it knows encoding/json would read the same way —
// valid JSON, the keys of these events spelled exactly (a key that differs only in case would
// match a field there), no key twice, each value of its field's type, no content blocks —
// and leaves everything else to the general decoder (ok false).

// maxFastEvent bounds the events read here: past it, nesting depth limits could differ.
const maxFastEvent = 8 << 10

// Field names, lower-case ASCII: a key equal to none of them is either ignored by
// encoding/json too or (upper case, non-ASCII) left to it.
var (
	eventKeys   = []string{"type", "message", "index", "content_block", "delta", "usage", "error"}
	messageKeys = []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
	deltaKeys   = []string{"type", "text", "partial_json", "thinking", "signature", "stop_reason", "stop_sequence"}
	usageKeys   = []string{"input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens_details", "service_tier"}
	detailsKeys = []string{"thinking_tokens"}
)

func readStreamEvent(data []byte) (se mw.StreamEvent, ok bool) {
	if len(data) > maxFastEvent {
		return se, false
	}
	doc, ok := readDocument(data) // json.go
	if !ok {
		return se, false
	}
	ok = eachField(doc, eventKeys, func(key string, v value) bool {
		switch key {
		case "type":
			return readString(v, &se.Type)
		case "message":
			if v.null() {
				return true
			}
			se.Message = new(mw.Message)
			return readMessage(v, se.Message)
		case "delta":
			if v.null() {
				return true
			}
			se.Delta = new(mw.Delta)
			return readDeltaObject(v, se.Delta)
		case "usage":
			if v.null() {
				return true
			}
			se.Usage = new(mw.Usage)
			return readUsage(v, se.Usage)
		}
		return false // index, content_block, error: the general decoder's
	})
	return se, ok
}

func readMessage(v value, m *mw.Message) bool {
	return eachField(v, messageKeys, func(key string, v value) bool {
		switch key {
		case "id":
			return readString(v, &m.ID)
		case "type":
			return readString(v, &m.Type)
		case "role":
			return readString(v, &m.Role)
		case "model":
			return readString(v, &m.Model)
		case "content":
			// message_start's is empty; blocks have their own decoding.
			if v.null() {
				return true
			}
			if !v.emptyArray() {
				return false
			}
			m.Content = []mw.ContentBlock{}
			return true
		case "stop_reason":
			return readStringPtr(v, &m.StopReason)
		case "stop_sequence":
			return readStringPtr(v, &m.StopSequence)
		case "usage":
			return v.null() || readUsage(v, &m.Usage)
		}
		return false
	})
}

func readDeltaObject(v value, d *mw.Delta) bool {
	return eachField(v, deltaKeys, func(key string, v value) bool {
		switch key {
		case "type":
			return readString(v, &d.Type)
		case "text":
			return readString(v, &d.Text)
		case "partial_json":
			return readString(v, &d.PartialJSON)
		case "thinking":
			return readString(v, &d.Thinking)
		case "signature":
			return readString(v, &d.Signature)
		case "stop_reason":
			return readStringPtr(v, &d.StopReason)
		case "stop_sequence":
			return readStringPtr(v, &d.StopSequence)
		}
		return false
	})
}

func readUsage(v value, u *mw.Usage) bool {
	return eachField(v, usageKeys, func(key string, v value) bool {
		switch key {
		case "input_tokens":
			return readIntPtr(v, &u.InputTokens)
		case "output_tokens":
			return readIntPtr(v, &u.OutputTokens)
		case "cache_creation_input_tokens":
			return readIntPtr(v, &u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return readIntPtr(v, &u.CacheReadInputTokens)
		case "service_tier":
			return readString(v, &u.ServiceTier)
		case "output_tokens_details":
			if v.null() {
				u.OutputTokensDetails = nil
				return true
			}
			d := new(mw.OutputTokensDetails)
			u.OutputTokensDetails = d
			return eachField(v, detailsKeys, func(_ string, v value) bool {
				if v.null() {
					return true
				}
				n, ok := readInt(v)
				d.ThinkingTokens = n
				return ok
			})
		}
		return false
	})
}

// eachField calls f for each key of object v that is one of known (lower-case ASCII), and
// reports false when v is not an object, a known key repeats, a key could match a field only
// case-insensitively, or f refuses.
func eachField(v value, known []string, f func(key string, v value) bool) bool {
	if !v.object() {
		return false
	}
	var seen uint32
	return v.members(func(key []byte, val value) bool {
		i := 0
		for i < len(known) && known[i] != string(key) {
			i++
		}
		if i == len(known) {
			// Ignored by encoding/json unless it folds to a field name; lower-case ASCII keys
			// cannot without being equal.
			return lowerASCII(key)
		}
		if seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		return f(known[i], val)
	})
}

func lowerASCII(s []byte) bool {
	for i := range len(s) {
		if c := s[i]; c >= 0x80 || c >= 'A' && c <= 'Z' {
			return false
		}
	}
	return true
}

// readString reads a string as encoding/json does; null leaves it as it is.
func readString(v value, dst *string) bool {
	switch {
	case v.null():
		return true
	case v.str():
		s, _, ok := jsontext.String(v.raw, 0)
		*dst = s
		return ok
	}
	return false
}

func readStringPtr(v value, dst **string) bool {
	if v.null() {
		*dst = nil
		return true
	}
	s := new(string)
	*dst = s
	return readString(v, s)
}

// readInt reads an int64 literal as encoding/json does (no fraction, no exponent).
func readInt(v value) (int64, bool) {
	if !v.number() {
		return 0, false
	}
	n, err := strconv.ParseInt(string(v.raw), 10, 64)
	return n, err == nil
}

func readIntPtr(v value, dst **int64) bool {
	if v.null() {
		*dst = nil
		return true
	}
	n, ok := readInt(v)
	*dst = &n
	return ok
}
