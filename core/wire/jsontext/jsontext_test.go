package jsontext

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
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

// Unquote gives String's text without a copy when the token needs no decoding (valid UTF-8
// without escapes, in any language), and decodes into the caller's buffer otherwise.
func TestUnquoteSharesPlainTokensAndDecodesTheRest(t *testing.T) {
	t.Parallel()
	for tok, plain := range map[string]bool{
		`"hello"`: true, `"été 日本語 😀"`: true, `""`: true,
		`"a\"b"`: false, `"\u00e9"`: false, "\"bad \xff utf8\"": false, `"tab\tthere"`: false,
	} {
		want, wantNext, _ := String([]byte(tok), 0)
		buf := make([]byte, 0, 64)
		data := []byte(tok)
		got, next, ok := Unquote(data, 0, &buf)
		if !ok || string(got) != want || next != wantNext {
			t.Errorf("%s: got %q next %d ok %v, want %q next %d", tok, got, next, ok, want, wantNext)
			continue
		}
		shared := len(got) > 0 && &got[0] == &data[1]
		inBuf := len(got) > 0 && &got[0] == &buf[:1][0]
		if len(got) > 0 && (shared != plain || inBuf == plain) {
			t.Errorf("%s: shares the token %v, uses the buffer %v; want plain=%v", tok, shared, inBuf, plain)
		}
	}
}

// AppendString writes what encoding/json writes (HTML escaping off), and AppendSlogEscaped
// what log/slog's JSON handler writes, for every byte and the runes each treats apart.
func TestAppendStringMatchesTheEncoders(t *testing.T) {
	t.Parallel()
	inputs := []string{"", "plain", "été 日本語 😀", "\u2028\u2029", "bad \xff utf8", "cut \xe6\x97", "<a&b>", `q"b\s`}
	for c := range 256 {
		inputs = append(inputs, "x"+string([]byte{byte(c)})+"y")
	}
	for _, s := range inputs {
		var enc bytes.Buffer
		e := json.NewEncoder(&enc)
		e.SetEscapeHTML(false)
		if err := e.Encode(s); err != nil {
			t.Fatal(err)
		}
		if got, want := string(AppendString([]byte("pre"), s)), "pre"+strings.TrimSuffix(enc.String(), "\n"); got != want {
			t.Errorf("AppendString(%q) = %s, encoding/json %s", s, got, want)
		}
		var line bytes.Buffer
		slog.New(slog.NewJSONHandler(&line, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
				return slog.Attr{}
			}
			return a
		}})).Info(s)
		if got, want := `{"msg":"`+string(AppendSlogEscaped(nil, s))+"\"}\n", line.String(); got != want {
			t.Errorf("AppendSlogEscaped(%q) = %s, slog %s", s, got, want)
		}
	}
}
