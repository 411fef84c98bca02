package anthropic

import (
	"modelgateway/core/provider"
	mw "modelgateway/core/wire/messageswire"
	"modelgateway/core/wire/strictjson"
)

// message_start and message_delta come once per stream, but encoding/json's reflection over
// the whole StreamEvent made them (with a text block's content_block_start) 40 % of the
// decoder's time on a 20-word answer. readStreamEvent reads them in one pass (a
// strictjson.Reader over text nobody has checked: each value is checked as it is read, the
// ones it skips too) into the same StreamEvent. It only accepts what it knows encoding/json
// would read the same way — valid JSON in UTF-8, the keys of these events spelled exactly (a
// key that differs only in case would match a field there), no key twice, each value of its
// field's type, no content blocks — and leaves everything else to the general decoder (ok
// false).

// maxFastEvent bounds the events read here: past it, nesting depth limits could differ.
const maxFastEvent = 8 << 10

// Field names, lower-case ASCII: a key equal to none of them is either ignored by
// encoding/json too or (upper case, non-ASCII) left to it. Each list is in the order the
// API writes its keys, which the compact reader expects first (cursor.object).
var (
	eventKeys   = []string{"type", "message", "index", "content_block", "delta", "usage", "error"}
	messageKeys = []string{"id", "type", "role", "model", "content", "stop_reason", "stop_sequence", "usage"}
	deltaKeys   = []string{"type", "text", "partial_json", "thinking", "signature", "stop_reason", "stop_sequence"}
	usageKeys   = []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens", "output_tokens_details", "service_tier"}
	detailsKeys = []string{"thinking_tokens"}
)

func readStreamEvent(data []byte) (se mw.StreamEvent, ok bool) {
	return readStreamEventIn(data, nil, nil)
}

// readStreamEventIn is readStreamEvent with the compact layout's fields in room (nil: a new
// one) and its strings in text's block (readCompactEventIn); what it returns points into
// room.
func readStreamEventIn(data []byte, room *compactEvent, text *provider.Deltas) (se mw.StreamEvent, ok bool) {
	if len(data) > maxFastEvent {
		return se, false
	}
	if se, ok := readCompactEventIn(data, room, text); ok { // compactevent.go: the usual layout
		return se, true
	}
	s := strictjson.NewReader(data)
	defer s.Done()
	ok = eachField(s, eventKeys, func(key string) bool {
		switch key {
		case "type":
			return readString(s, &se.Type)
		case "message":
			if s.Null() {
				return true
			}
			se.Message = new(mw.Message)
			return readMessage(s, se.Message)
		case "delta":
			if s.Null() {
				return true
			}
			se.Delta = new(mw.Delta)
			return readDeltaObject(s, se.Delta)
		case "usage":
			if s.Null() {
				return true
			}
			se.Usage = new(mw.Usage)
			return readUsage(s, se.Usage)
		}
		return false // index, content_block, error: the general decoder's
	})
	return se, ok && s.End()
}

func readMessage(s *strictjson.Reader, m *mw.Message) bool {
	return eachField(s, messageKeys, func(key string) bool {
		switch key {
		case "id":
			return readString(s, &m.ID)
		case "type":
			return readString(s, &m.Type)
		case "role":
			return readString(s, &m.Role)
		case "model":
			return readString(s, &m.Model)
		case "content":
			// message_start's is empty; blocks have their own decoding.
			if s.Null() {
				return true
			}
			if !s.Array(func() bool { return false }) {
				return false
			}
			m.Content = []mw.ContentBlock{}
			return true
		case "stop_reason":
			return readStringPtr(s, &m.StopReason)
		case "stop_sequence":
			return readStringPtr(s, &m.StopSequence)
		case "usage":
			return s.Null() || readUsage(s, &m.Usage)
		}
		return false
	})
}

func readDeltaObject(s *strictjson.Reader, d *mw.Delta) bool {
	return eachField(s, deltaKeys, func(key string) bool {
		switch key {
		case "type":
			return readString(s, &d.Type)
		case "text":
			return readString(s, &d.Text)
		case "partial_json":
			return readString(s, &d.PartialJSON)
		case "thinking":
			return readString(s, &d.Thinking)
		case "signature":
			return readString(s, &d.Signature)
		case "stop_reason":
			return readStringPtr(s, &d.StopReason)
		case "stop_sequence":
			return readStringPtr(s, &d.StopSequence)
		}
		return false
	})
}

func readUsage(s *strictjson.Reader, u *mw.Usage) bool {
	return eachField(s, usageKeys, func(key string) bool {
		switch key {
		case "input_tokens":
			return readIntPtr(s, &u.InputTokens)
		case "output_tokens":
			return readIntPtr(s, &u.OutputTokens)
		case "cache_creation_input_tokens":
			return readIntPtr(s, &u.CacheCreationInputTokens)
		case "cache_read_input_tokens":
			return readIntPtr(s, &u.CacheReadInputTokens)
		case "service_tier":
			return readString(s, &u.ServiceTier)
		case "output_tokens_details":
			if s.Null() {
				u.OutputTokensDetails = nil
				return true
			}
			d := new(mw.OutputTokensDetails)
			u.OutputTokensDetails = d
			return eachField(s, detailsKeys, func(string) bool {
				if s.Null() {
					return true
				}
				n, ok := s.Integer(64)
				d.ThinkingTokens = n
				return ok
			})
		}
		return false
	})
}

// eachField reads an object, calling f at the value of each key that is one of known
// (lower-case ASCII); it checks and skips the values of the other keys. It reports false when
// the value is not an object, a key repeats (the Reader refuses it), a key could match a
// field only case-insensitively, or f refuses.
func eachField(s *strictjson.Reader, known []string, f func(key string) bool) bool {
	return s.Object(func(key []byte) bool {
		i := 0
		for i < len(known) && known[i] != string(key) {
			i++
		}
		if i == len(known) {
			// Ignored by encoding/json unless it folds to a field name; lower-case ASCII keys
			// cannot without being equal.
			return lowerASCII(key) && s.Skip()
		}
		return f(known[i])
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
func readString(s *strictjson.Reader, dst *string) bool {
	switch {
	case s.Null():
		return true
	case s.Kind() == '"':
		str, ok := s.String()
		*dst = str
		return ok
	}
	return false
}

func readStringPtr(s *strictjson.Reader, dst **string) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	str := new(string)
	*dst = str
	return readString(s, str)
}

// readIntPtr reads an int64 literal as encoding/json does (no fraction, no exponent).
func readIntPtr(s *strictjson.Reader, dst **int64) bool {
	if s.Null() {
		*dst = nil
		return true
	}
	n, ok := s.Integer(64)
	*dst = &n
	return ok
}
