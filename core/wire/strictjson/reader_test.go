package strictjson

import (
	"math"
	"testing"
	"unsafe"
)

// read reads text with f and tells whether f read it whole.
func read(text string, f func(r *Reader) bool) bool {
	r := NewReader([]byte(text))
	defer r.Done()
	return f(r) && r.End()
}

func TestReaderReadsNumbersAsUnmarshal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string
		bits int
		want int64
		ok   bool
	}{
		{"0", 64, 0, true},
		{"-0", 64, 0, true},
		{"9223372036854775807", 64, math.MaxInt64, true},
		{"-9223372036854775808", 64, math.MinInt64, true},
		{"9223372036854775808", 64, 0, false},
		{"-9223372036854775809", 64, 0, false},
		{"2147483647", 32, math.MaxInt32, true},
		{"-2147483648", 32, math.MinInt32, true},
		{"2147483648", 32, 0, false},
		{"1.0", 64, 0, false},
		{"1e2", 64, 0, false},
		{"01", 64, 0, false},
		{`"1"`, 64, 0, false},
	} {
		var got int64
		ok := read(c.text, func(r *Reader) (ok bool) { got, ok = r.Integer(c.bits); return ok })
		if ok != c.ok || ok && got != c.want {
			t.Errorf("Integer(%d) of %s: %d %v, want %d %v", c.bits, c.text, got, ok, c.want, c.ok)
		}
	}
	for text, want := range map[string]float64{"0.5": 0.5, "-1e-3": -0.001, "1E2": 100, "1e400": 0, `"1"`: 0, "true": 0} {
		var got float64
		ok := read(text, func(r *Reader) (ok bool) { got, ok = r.Float(); return ok })
		if ok != (want != 0) || ok && got != want {
			t.Errorf("Float of %s: %v %v, want %v", text, got, ok, want)
		}
	}
}

// Object gives names with escapes decoded, and refuses what Check refuses, at any depth.
func TestReaderChecksAsCheck(t *testing.T) {
	t.Parallel()
	var names []string
	walk := func(r *Reader) bool {
		names = names[:0]
		return r.Object(func(name []byte) bool {
			names = append(names, string(name))
			if string(name) == "a" {
				return r.Array(func() bool { _, ok := r.Integer(64); return ok })
			}
			return r.Skip()
		})
	}
	if !read(` { "a" : [ 1 , 2 ] , "b":{"x":[{}]} ,"\u0063":"x"} `, walk) || len(names) != 3 || names[2] != "c" {
		t.Fatalf("a valid object: names %q", names)
	}
	for _, text := range []string{
		`{"a":[1],"\u0061":[2]}`, // a name twice, once escaped
		`{"b":{"x":1,"x":2}}`,    // a name twice, deeper
		"{\"b\":\"\xff\"}",       // invalid UTF-8
		`{"b":"\ud800"}`,         // a lone surrogate
		`{"b":1} {}`,             // two values
		`{"b":1`,                 // cut
		`[1]`,                    // not an object
	} {
		if read(text, walk) {
			t.Errorf("%s: read", text)
		}
		if Check([]byte(text)) == nil && text != `[1]` {
			t.Errorf("%s: Check passes it", text)
		}
	}
	// The field must read the value.
	if read(`{"a":"b"}`, func(r *Reader) bool { return r.Object(func([]byte) bool { return true }) }) {
		t.Error("an object was read past an unread value")
	}
}

// Raw is the text's own bytes, capped: no copy, and an append cannot write into the text.
func TestReaderRawIsTheText(t *testing.T) {
	t.Parallel()
	data := []byte(`{"c":[1, {"d":"}"}]}`)
	r := NewReader(data)
	defer r.Done()
	var raw []byte
	if !r.Object(func([]byte) bool { var ok bool; raw, ok = r.Raw(); return ok }) || string(raw) != `[1, {"d":"}"}]` {
		t.Fatalf("Raw: %s", raw)
	}
	if &raw[0] != &data[5] || cap(raw) != len(raw) {
		t.Error("Raw copied the value or left it open to appends")
	}
}

// String decodes as encoding/json does, escapes included, and refuses what Check refuses;
// the protocols' enumeration words come back as the one shared string (no allocation).
func TestReaderStringDecodesAndSharesKnownWords(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text, want string
		ok, shared bool
	}{
		{`"end_turn"`, "end_turn", true, true},
		{`"assistant"`, "assistant", true, true},
		{`"end_\u0074urn"`, "end_turn", true, false}, // escaped: decoded, not looked up
		{`"a\"b\\c\n"`, "a\"b\\c\n", true, false},
		{`"héllo"`, "héllo", true, false},
		{`""`, "", true, false},
		{"\"\xff\"", "", false, false}, // invalid UTF-8
		{`"\ud800"`, "", false, false}, // a lone surrogate
		{`12`, "", false, false},       // not a string
		{`null`, "", false, false},
	} {
		var got string
		ok := read(c.text, func(r *Reader) bool { var ok bool; got, ok = r.String(); return ok })
		if ok != c.ok || ok && got != c.want {
			t.Errorf("%s: %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
		if c.shared && unsafe.StringData(got) != unsafe.StringData(knownWords[c.want]) {
			t.Errorf("%s: a copy, not the shared word", c.text)
		}
	}
}
