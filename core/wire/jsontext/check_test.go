package jsontext

import (
	"encoding/json"
	"testing"
)

var checkSeeds = []string{
	`{}`, ` [ ] `, `{"a":[1,-0.5e+3,true,false,null,"x\u00e9\n",{"b":{}}]}`, `"s"`, `-0`, `1E5`,
	`{"a":1,}`, `[1 2]`, `{"a" 1}`, `01`, `1.`, `-`, `.5`, `1e`, `tru`, `nul`, `"\x"`, "\"\x01\"",
	`{"a":1}}`, `[`, `{"a":{"b":[}]}`, "\"\xff\"", "{\"a\x01\":1}",
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`,
}

// checked is what a reader of unchecked text does with a value it does not know.
func checked(data []byte) bool {
	s := NewScanner(data)
	return s.Skip() && s.End()
}

// Skip and End accept exactly what encoding/json accepts.
func TestSkipAcceptsWhatEncodingJSONAccepts(t *testing.T) {
	t.Parallel()
	for _, s := range checkSeeds {
		if ok := checked([]byte(s)); ok != json.Valid([]byte(s)) {
			t.Errorf("%q: read %v, encoding/json valid %v", s, ok, !ok)
		}
	}
}

func FuzzSkip(f *testing.F) {
	for _, s := range checkSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if ok := checked(data); ok != json.Valid(data) {
			t.Fatalf("%q: read %v, encoding/json valid %v", data, ok, !ok)
		}
	})
}

// The methods a reader of unchecked text uses refuse what is not JSON, though they would
// never meet it in a valid text: a control character in a key, a leading zero.
func TestCheckingMethodsRefuseWhatIsNotJSON(t *testing.T) {
	t.Parallel()
	keys := func(text string) bool {
		s := NewScanner([]byte(text))
		return s.Object(func([]byte) bool { return s.Skip() }) && s.End()
	}
	if !keys(`{"a b":1}`) || keys("{\"a\x01b\":1}") || keys("{\"a\nb\":1}") {
		t.Error("Object: a key with a raw control character read, or a plain key refused")
	}
	for text, want := range map[string]bool{"0": true, "-0": true, "10": true, "01": false, "-01": false, "00": false} {
		s := NewScanner([]byte(text))
		_, ok := s.Integer(64)
		if ok = ok && s.End(); ok != want {
			t.Errorf("Integer of %s: %v, want %v", text, ok, want)
		}
	}
	for text, want := range map[string]bool{"null": true, " null ": true, "nul": false, "nulll": false, "Null": false} {
		s := NewScanner([]byte(text))
		if ok := s.Peek() == 'n' && s.Null() && s.End(); ok != want {
			t.Errorf("Null of %q: %v, want %v", text, ok, want)
		}
	}
}
