package metering

import "bytes"

// plainChatCounts is openAIChatCounts for the usage object every OpenAI-style upstream
// sends: printable ASCII names without escapes, each count a run of at most 15 digits (below
// 2^53), the two details objects flat, any other member a count, a plain string, true, false
// or null. It reads that shape byte by byte, checking it as it goes, in a tenth of the time
// of the tokenizer (which checks UTF-8, escapes and every name's uniqueness at any depth:
// most of a chat answer's metering). Anything else (an escape, a sign, a fraction, an array,
// a deeper object, a known name twice, a total that is not the sum) reports !ok and takes
// the general way, which gives the same record for what this reads (FuzzPlainChatCounts).
// n holds prompt, completion, total, cached, cache-write and reasoning.
func plainChatCounts(raw []byte) (n [6]int64, ok bool) {
	s := plainScan{b: raw}
	var seen uint8
	count := func(i int) bool {
		if seen&(1<<i) != 0 {
			return false // a name twice: the general way tells which one counts
		}
		seen |= 1 << i
		var read bool
		n[i], read = s.count()
		return read
	}
	details := uint8(0) // the details objects read (each once)
	ok = s.object(func(name []byte) bool {
		switch string(name) {
		case "prompt_tokens":
			return count(0)
		case "completion_tokens":
			return count(1)
		case "total_tokens":
			return count(2)
		case "prompt_tokens_details":
			if details&1 != 0 {
				return false
			}
			details |= 1
			return s.object(func(name []byte) bool {
				switch string(name) {
				case "cached_tokens":
					return count(3)
				case "cache_write_tokens":
					return count(4)
				}
				return s.scalar()
			})
		case "completion_tokens_details":
			if details&2 != 0 {
				return false
			}
			details |= 2
			return s.object(func(name []byte) bool {
				if string(name) == "reasoning_tokens" {
					return count(5)
				}
				return s.scalar()
			})
		}
		return s.scalar()
	}) && s.end()
	return n, ok && seen&3 == 3 && (seen&4 == 0 || n[2] == n[0]+n[1])
}

// plainScan reads the plain shape of plainChatCounts; each method skips the white space
// before what it reads and reports false on anything else.
type plainScan struct {
	b []byte
	i int
}

func (s *plainScan) space() {
	i := s.i
	for i < len(s.b) && (s.b[i] == ' ' || s.b[i] == '\n' || s.b[i] == '\t' || s.b[i] == '\r') {
		i++
	}
	s.i = i
}

// take reads the byte c.
func (s *plainScan) take(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads an object, calling field at each member's value, which field must read.
func (s *plainScan) object(field func(name []byte) bool) bool {
	if !s.take('{') {
		return false
	}
	if s.take('}') {
		return true
	}
	for {
		name, ok := s.str()
		if !ok || !s.take(':') || !field(name) {
			return false
		}
		if !s.take(',') {
			return s.take('}')
		}
	}
}

// str reads a string of printable ASCII without escapes and returns what is inside it.
func (s *plainScan) str() ([]byte, bool) {
	if !s.take('"') {
		return nil, false
	}
	// Locals, not s's fields: the loops keep them in registers (a third of the time).
	b, start := s.b, s.i
	end := bytes.IndexByte(b[start:], '"')
	if end < 0 {
		return nil, false
	}
	str := b[start : start+end]
	for _, c := range str {
		if !plainByte[c] {
			return nil, false
		}
	}
	s.i = start + end + 1
	return str, true
}

// plainByte tells the bytes a plain string holds: printable ASCII but the quote and the
// backslash.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// count reads a whole number of at most 15 digits, without a sign or leading zeros; what
// follows it must be a delimiter, which the caller reads (a fraction or an exponent is not).
func (s *plainScan) count() (int64, bool) {
	s.space()
	b, start, i := s.b, s.i, s.i
	var n int64
	for i < len(b) && b[i]-'0' <= 9 {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	s.i = i
	digits := i - start
	if digits == 0 || digits > 15 || digits > 1 && b[start] == '0' {
		return 0, false
	}
	return n, true
}

// scalar reads a member that is not counted: a count, a plain string, true, false or null.
func (s *plainScan) scalar() bool {
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case 't':
		return s.word("true")
	case 'f':
		return s.word("false")
	case 'n':
		return s.word("null")
	}
	_, ok := s.count()
	return ok
}

func (s *plainScan) word(w string) bool {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return false
	}
	s.i += len(w)
	return true
}

// end tells whether only white space follows.
func (s *plainScan) end() bool {
	s.space()
	return s.i == len(s.b)
}
