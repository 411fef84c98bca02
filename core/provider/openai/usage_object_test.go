package openai

import (
	"testing"

	"github.com/tidwall/gjson"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

// The decoder's look for a usage object (provider.ScanChunk) must see every usage object
// gjson would find, and may skip the nulls.
func TestUsageObject(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]bool{
		`{"choices":[],"usage":{"prompt_tokens":1}}`:                     true,
		`{"choices":[],"usage" :  {"prompt_tokens":1}}`:                  true,
		"{\"usage\"\n:\t{}}":                                             true,
		`{"x":{"usage":null},"usage":{"prompt_tokens":1}}`:               true,
		`{"usage":{"prompt_tokens":1},"x":{"usage":null}}`:               true,
		`{"id":"c","choices":[{"delta":{"content":"hi"}}],"usage":null}`: false,
		`{"choices":[{"delta":{"content":"\"usage\":{"}}],"usage":null}`: false,
		`{"choices":[{"delta":{"content":"usage"}}]}`:                    false,
		`{"usage":"{"}`: false,
		`{"usage"::{}}`: false,
		`{"usage"{:{}}`: false,
		`{"usage":`:     false,
		`{"usage"`:      false,
	} {
		if got := provider.ScanChunk([]byte(data)).Usage; got != want {
			t.Errorf("%s: %v, want %v", data, got, want)
		}
	}
}

// The usage chunk's object is read in place: the usage of the bytes gjson.GetBytes gave
// before, for every chunk a usage object passes the look for one in, and only for those.
func TestUsageReadInPlace(t *testing.T) {
	t.Parallel()
	for _, data := range []string{
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"usage" : {"a":{"b":[1,2]}} ,"usage":{"second":1}}`,
		`{"x":{"usage":{"nested":1}},"usage":null}`,
		`{"usage":null}`, `{"usage":"{"}`, `{"usage":{`, `{"usage":[{}]}`,
	} {
		d := &passDecoder{upstream: "m", public: "m"}
		if _, _, err := d.Decode(sse.Event{Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
		var want []byte
		if u := gjson.GetBytes([]byte(data), "usage"); provider.ScanChunk([]byte(data)).Usage && u.IsObject() {
			want = []byte(u.Raw)
		}
		if got, want := d.Usage(), metering.FromOpenAIChat(want); got != want {
			t.Errorf("%s: usage %+v, want %+v", data, got, want)
		}
	}
}
