package anthropic

import "modelgateway/core/wire/jsontext"

// A small JSON reader for readStreamEvent (fastevent.go): one pass over an event, each value
// checked as it is met, so that the events it reads need neither a validation pass before
// nor a parse tree. It accepts only RFC 8259 JSON, as encoding/json does; anything else is
// refused and left to encoding/json.

// value is one JSON value, checked: raw is its text, without surrounding whitespace.
type value struct{ raw []byte }

func (v value) null() bool   { return string(v.raw) == "null" }
func (v value) str() bool    { return len(v.raw) > 0 && v.raw[0] == '"' }
func (v value) object() bool { return len(v.raw) > 0 && v.raw[0] == '{' }
func (v value) number() bool {
	return len(v.raw) > 0 && (v.raw[0] == '-' || v.raw[0] >= '0' && v.raw[0] <= '9')
}

// emptyArray reports whether v is [] (whitespace inside allowed).
func (v value) emptyArray() bool {
	return len(v.raw) >= 2 && v.raw[0] == '[' && skipSpace(v.raw, 1) == len(v.raw)-1
}

// readDocument reads data as one JSON value with optional whitespace around it.
func readDocument(data []byte) (value, bool) {
	start := skipSpace(data, 0)
	end, ok := skipValue(data, start)
	if !ok || skipSpace(data, end) != len(data) {
		return value{}, false
	}
	return value{data[start:end]}, true
}

// members calls f with each key (decoded; valid until the next call) and value of object
// v, in order, until f returns false; it reports whether every call returned true. v has
// been checked (skipValue), so its syntax need not be checked again.
func (v value) members(f func(key []byte, v value) bool) bool {
	data := v.raw
	var buf []byte
	i := skipSpace(data, 1)
	if data[i] == '}' {
		return true
	}
	for {
		key, next, ok := jsontext.Unquote(data, i, &buf)
		if !ok {
			return false
		}
		start := skipSpace(data, skipSpace(data, next)+1) // past the colon
		end, ok := skipValue(data, start)
		if !ok || !f(key, value{data[start:end]}) {
			return false
		}
		i = skipSpace(data, end)
		if data[i] == '}' {
			return true
		}
		i = skipSpace(data, i+1) // past the comma
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue checks the value at data[i] and returns the index after it.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch c := data[i]; {
	case c == '"':
		_, next, ok := jsontext.Unquote(data, i, nil)
		return next, ok
	case c == '{':
		return skipComposite(data, i, '}', true)
	case c == '[':
		return skipComposite(data, i, ']', false)
	case c == 't':
		return skipLiteral(data, i, "true")
	case c == 'f':
		return skipLiteral(data, i, "false")
	case c == 'n':
		return skipLiteral(data, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return skipNumber(data, i)
	}
	return i, false
}

func skipLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// skipComposite checks an object (keyed) or an array from its opening bracket.
func skipComposite(data []byte, i int, closing byte, keyed bool) (int, bool) {
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if keyed {
			if i >= len(data) || data[i] != '"' {
				return i, false
			}
			if i, ok = skipValue(data, i); !ok {
				return i, false
			}
			if i = skipSpace(data, i); i >= len(data) || data[i] != ':' {
				return i, false
			}
			i = skipSpace(data, i+1)
		}
		if i, ok = skipValue(data, i); !ok {
			return i, false
		}
		if i = skipSpace(data, i); i >= len(data) {
			return i, false
		}
		switch data[i] {
		case closing:
			return i + 1, true
		case ',':
			i = skipSpace(data, i+1)
		default:
			return i, false
		}
	}
}

// skipNumber checks -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func skipNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}
