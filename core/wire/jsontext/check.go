package jsontext

// A Scanner's reader may also take text nobody has checked, read in one pass with no
// validation before it (the provider adapters' readers of stream events): Object, Array,
// String, Integer, Bool, Null, Skip and End check what they read, so a reader that uses only
// those and ends with End accepts only what json.Valid accepts. Raw and Float assume a valid
// text.

// Null reads null.
func (s *Scanner) Null() bool { return s.literal("null") }

// End tells whether only white space is left.
func (s *Scanner) End() bool {
	s.space()
	return s.i == len(s.data)
}

// Skip reads any value, checking it as json.Valid does (RFC 8259).
func (s *Scanner) Skip() bool {
	s.space()
	next, ok := skipValue(s.data, s.i)
	s.i = next
	return ok
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
		_, next, ok := Unquote(data, i, nil)
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
