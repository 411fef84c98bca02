package jsontext

import (
	"strconv"
	"strings"
)

// Scanner reads a JSON text token by token, without reflection: the fast passes over the
// bodies every request has (a chat request, an answer's usage, a stream's events) use it and
// leave anything unusual to encoding/json or gjson. Given a text json.Valid accepted it checks
// only the shape its caller expects; a method that finds another reports false, and the
// caller gives up on the fast pass. (check.go: reading text nobody has checked.)
type Scanner struct {
	data []byte
	i    int
}

// Seen records which of an object's keys, numbered 0 to 63 by its reader, have been read: a
// reader refuses a repeated key, which encoding/json and gjson each resolve their own way.
type Seen uint64

// First marks key i read and tells whether it had not been.
func (k *Seen) First(i int) bool {
	if k.Has(i) {
		return false
	}
	*k |= 1 << i
	return true
}

// Has tells whether key i has been read.
func (k Seen) Has(i int) bool { return k&(1<<i) != 0 }

// NewScanner scans data, which must be valid JSON.
func NewScanner(data []byte) *Scanner { return &Scanner{data: data} }

// Peek is the next byte after white space, 0 at the end.
func (s *Scanner) Peek() byte {
	s.space()
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

func (s *Scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// Next tells whether the next byte after white space is c, and consumes it if so.
func (s *Scanner) Next(c byte) bool {
	if s.Peek() == c {
		s.i++
		return true
	}
	return false
}

// Object reads an object, calling field with each key (its bytes between the quotes) when
// the scanner is at the key's value, which field must read. A key with an escape (or a
// control character, which must be escaped) ends the read with false, as field's callers
// match keys as they are written.
func (s *Scanner) Object(field func(key []byte) bool) bool {
	if !s.Next('{') {
		return false
	}
	if s.Next('}') {
		return true
	}
	for {
		if s.Peek() != '"' {
			return false
		}
		start := s.i + 1
		end := start
		for end < len(s.data) && s.data[end] != '"' && s.data[end] != '\\' && s.data[end] >= 0x20 {
			end++
		}
		if end >= len(s.data) || s.data[end] != '"' {
			return false
		}
		s.i = end + 1
		if !s.Next(':') {
			return false
		}
		s.space()
		if !field(s.data[start:end]) {
			return false
		}
		if s.Next(',') {
			continue
		}
		return s.Next('}')
	}
}

// Array reads an array, calling elem at each element, which elem must read.
func (s *Scanner) Array(elem func() bool) bool {
	if !s.Next('[') {
		return false
	}
	if s.Next(']') {
		return true
	}
	for {
		s.space()
		if !elem() {
			return false
		}
		if s.Next(',') {
			continue
		}
		return s.Next(']')
	}
}

// String reads a string as encoding/json decodes it.
func (s *Scanner) String() (string, bool) {
	str, next, ok := String(s.data, s.i)
	s.i = next
	return str, ok
}

// Bool reads true or false.
func (s *Scanner) Bool() (bool, bool) {
	switch {
	case s.literal("true"):
		return true, true
	case s.literal("false"):
		return false, true
	}
	return false, false
}

func (s *Scanner) literal(word string) bool {
	if len(s.data)-s.i >= len(word) && string(s.data[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// Integer reads a number that encoding/json decodes into a signed integer of bits bits: an
// integer literal in range. Any other number is not read whole: a fraction or an exponent
// is left, and what follows the value is then no separator. A leading zero (not JSON) is
// refused.
func (s *Scanner) Integer(bits uint) (int64, bool) {
	neg := s.i < len(s.data) && s.data[s.i] == '-'
	if neg {
		s.i++
	}
	if s.i+1 < len(s.data) && s.data[s.i] == '0' && s.data[s.i+1] >= '0' && s.data[s.i+1] <= '9' {
		return 0, false
	}
	limit := uint64(1)<<(bits-1) - 1 // the largest value; one more when negative
	if neg {
		limit++
	}
	var n uint64
	digits := 0
	for ; s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9'; s.i++ {
		d := uint64(s.data[s.i] - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	if neg {
		return -int64(n-1) - 1, true // -limit fits only so
	}
	return int64(n), true
}

// Float reads a number as encoding/json decodes it into a float64.
func (s *Scanner) Float() (float64, bool) {
	if c := s.Peek(); c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	start := s.i
	for s.i < len(s.data) && strings.IndexByte("+-.0123456789eE", s.data[s.i]) >= 0 {
		s.i++
	}
	f, err := strconv.ParseFloat(string(s.data[start:s.i]), 64)
	return f, err == nil // out of range is an error, as in encoding/json
}

// Raw reads any value and returns its bytes, as a json.RawMessage field keeps them: a slice
// of the text, capped so that an append cannot write into the text.
func (s *Scanner) Raw() []byte {
	c := s.Peek()
	start := s.i
	switch c {
	case '"':
		s.skipString()
	case '{', '[':
		for depth := 0; s.i < len(s.data); {
			switch s.data[s.i] {
			case '"':
				s.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			s.i++
			if depth == 0 {
				break
			}
		}
	default: // a number or a literal
		for s.i < len(s.data) && strings.IndexByte(" \t\r\n,}]", s.data[s.i]) < 0 {
			s.i++
		}
	}
	return s.data[start:s.i:s.i]
}

// skipString moves past the string whose opening quote is at s.i.
func (s *Scanner) skipString() {
	for s.i++; s.i < len(s.data) && s.data[s.i] != '"'; s.i++ {
		if s.data[s.i] == '\\' {
			s.i++
		}
	}
	s.i++
}
