// Package jsontext holds the JSON string helpers both sides of the gateway share: String reads
// a single string token without reflection (the per-chunk fields of upstream streams are
// read in place, with the same result encoding/json gives), Marshal writes model output
// without HTML escaping, AppendString and AppendSlogEscaped write a string as encoding/json
// and log/slog do, without reflection (per stream chunk, per access line). It has no
// tokenizer: a text read token by token is read with strictjson.Reader, the strict reader's.
package jsontext

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Marshal encodes v without HTML escaping: model output is full of <, > and &, and \u003c
// in every chunk only costs bytes.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// String reads the JSON string token that starts at data[i] (its opening quote). It returns
// the decoded text, the index just after the closing quote, and false when data[i:] does not
// start with a well-formed string. Escapes are decoded and invalid UTF-8 becomes U+FFFD, as
// encoding/json does.
func String(data []byte, i int) (s string, next int, ok bool) {
	text, next, ok := Unquote(data, i, nil)
	if !ok {
		return "", i, false
	}
	return string(text), next, true
}

// Unquote is String without making a string: the text is the token's own bytes (a slice of
// data) when it has no escapes and is valid UTF-8, as most model text is, else it is decoded
// into (*buf)[:0], which keeps what it grew to (buf nil: a new buffer). A decoder that keeps
// its text elsewhere (provider.Deltas) copies it once, from here.
func Unquote(data []byte, i int, buf *[]byte) (text []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	start := i + 1
	for j := start; j < len(data); {
		if plainBytes[data[j]] { // a table look per byte: every streamed delta's text comes here
			j++
			continue
		}
		switch c := data[j]; {
		case c == '"':
			return data[start:j], j + 1, true
		case c == '\\' || c < 0x20:
			return decodeInto(data, start, j, buf)
		case c < utf8.RuneSelf:
			j++
		default:
			// Valid UTF-8 is kept as it is; an invalid byte is replaced (decode).
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size == 1 {
				return decodeInto(data, start, j, buf)
			}
			j += size
		}
	}
	return nil, i, false
}

func decodeInto(data []byte, start, from int, buf *[]byte) ([]byte, int, bool) {
	var b []byte
	if buf != nil {
		b = (*buf)[:0]
	}
	text, next, ok := decode(data, start, from, b)
	if buf != nil && cap(text) > cap(*buf) {
		*buf = text[:0]
	}
	return text, next, ok
}

// decode is Unquote's slow path: data[start:from] is plain text, decoding starts at from.
func decode(data []byte, start, from int, buf []byte) ([]byte, int, bool) {
	buf = append(buf, data[start:from]...)
	for j := from; j < len(data); {
		c := data[j]
		switch {
		case c == '"':
			return buf, j + 1, true
		case c < 0x20:
			return nil, start - 1, false // control characters must be escaped
		case c == '\\':
			if j+1 >= len(data) {
				return nil, start - 1, false
			}
			j += 2
			switch data[j-1] {
			case '"', '\\', '/':
				buf = append(buf, data[j-1])
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(data, j)
				if !ok {
					return nil, start - 1, false
				}
				j += 4
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by an escaped low one is one rune; any
					// other surrogate stands alone and is invalid.
					if r2, ok := hex4(data, j+2); ok && j+1 < len(data) && data[j] == '\\' && data[j+1] == 'u' {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							buf = utf8.AppendRune(buf, dec)
							j += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return nil, start - 1, false
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			j++
		default:
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, data[j:j+size]...)
			}
			j += size
		}
	}
	return nil, start - 1, false
}

// hex4 reads the four hex digits of a \u escape at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i:i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(n), true
}

// AppendString appends s as a quoted JSON string exactly as encoding/json writes it with HTML
// escaping off: quote, backslash and control characters escaped, invalid UTF-8 as U+FFFD, and
// U+2028 and U+2029 escaped; nothing else.
func AppendString(dst []byte, s string) []byte {
	return append(appendEscaped(append(dst, '"'), s, true), '"')
}

// AppendSlogEscaped appends the inside of s as a JSON string (no quotes) exactly as log/slog's
// JSON handler writes it: as AppendString, except that \b and \f become \u0008 and \u000c.
func AppendSlogEscaped(dst []byte, s string) []byte {
	return appendEscaped(dst, s, false)
}

const hexDigits = "0123456789abcdef"

// plainBytes are the bytes a JSON string holds as they are: printable ASCII but '"' and
// '\\'. One table look per byte on the path every streamed text delta takes, where the
// chain of comparisons cost twice as much.
var plainBytes = func() (t [256]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendEscaped escapes s; shortBF writes backspace and form feed as \b and \f.
func appendEscaped(dst []byte, s string, shortBF bool) []byte {
	start := 0
	for i := 0; i < len(s); {
		if plainBytes[s[i]] {
			i++
			continue
		}
		if b := s[i]; b < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch {
			case b == '\\' || b == '"':
				dst = append(dst, '\\', b)
			case b == '\n':
				dst = append(dst, '\\', 'n')
			case b == '\r':
				dst = append(dst, '\\', 'r')
			case b == '\t':
				dst = append(dst, '\\', 't')
			case b == '\b' && shortBF:
				dst = append(dst, '\\', 'b')
			case b == '\f' && shortBF:
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(append(dst, s[start:i]...), `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(append(dst, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(dst, s[start:]...)
}
