package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestStringMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{
		`""`, `"hello"`, `" word"`, `"a\"b"`, `"back\\slash"`, `"\/"`, `"line\nbreak\r\t\b\f"`,
		`"\u00e9t\u00E9"`, `"été"`, `"日本語"`, `"\ud83d\ude00 smile"`, `"😀"`,
		`"\ud83d alone"`, `"\ude00 low first"`, `"\ud83d\u0041"`, "\"bad \xff utf8\"", "\"cut \xe6\x97\"",
		`"{\"a\":1}"`, `"\u2028\u2029"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(tok), &want); err != nil {
			t.Fatalf("%s: encoding/json: %v", tok, err)
		}
		data := []byte(tok + `,"next"`)
		got, next, ok := String(data, 0)
		if !ok || got != want || next != len(tok) {
			t.Errorf("%s: got %q next %d ok %v, want %q next %d", tok, got, next, ok, want, len(tok))
		}
	}
}

func TestStringRefusesMalformedTokens(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{
		``, `x`, `"unterminated`, `"esc at end\`, `"bad \x escape"`, `"\u12"`, `"\u12g4"`,
		"\"raw\ncontrol\"", `"unterminated \"`, "\"slow path then cut \xc3\xa9",
	} {
		if got, _, ok := String([]byte(tok), 0); ok {
			t.Errorf("%q: accepted as %q", tok, got)
		}
	}
}

func FuzzString(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\n"`, `"\ud83d\ude00"`, "\"\xff\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, next, ok := String(data, 0)
		var want string
		err := json.Unmarshal(data, &want)
		if ok && next == len(data) {
			if err != nil || got != want {
				t.Fatalf("%q: got %q, encoding/json %q %v", data, got, want, err)
			}
		}
		// encoding/json allows whitespace around the token; String reads from the quote.
		end := len(bytes.TrimRight(data, " \t\r\n"))
		if err == nil && len(data) > 0 && data[0] == '"' && (!ok || next != end || got != want) {
			t.Fatalf("%q: encoding/json reads %q, String %q next %d ok %v", data, want, got, next, ok)
		}
	})
}
