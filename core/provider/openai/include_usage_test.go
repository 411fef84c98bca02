package openai

import (
	"bytes"
	"testing"

	"github.com/tidwall/sjson"
)

// includeUsageSeeds: request bodies, and the shapes sjson treats apart.
var includeUsageSeeds = []string{
	`{"model":"up-gpt","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
	`{}`, `{ }`, "{\"a\":1}\n", " \t{\"a\":1}", `{"a":1,}`, `{"a":"}"}`, `{"a":1}}`, `{"a":1`, `{`,
	`{"stream_options":null}`, `{"stream_options":{"include_usage":false}}`, `{"stream_options":{"x":1}}`,
	`{"stream\u005foptions":{"x":1}}`, `{"x":{"stream_options":{}}}`, `[1]`, `"x"`, ``, `   `, `{]`, `{"a":[1,2]}`,
}

// includeUsage writes what sjson writes, and fails where it fails, on every body.
func TestIncludeUsageIsSJSONs(t *testing.T) {
	for _, s := range includeUsageSeeds {
		checkIncludeUsage(t, []byte(s))
	}
	body := []byte(includeUsageSeeds[0])
	if n := testing.AllocsPerRun(100, func() { _, _ = includeUsage(body) }); n != 1 {
		t.Fatalf("%v allocations for a body without stream_options, want its copy only", n)
	}
}

func FuzzIncludeUsage(f *testing.F) {
	for _, s := range includeUsageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(checkIncludeUsage)
}

func checkIncludeUsage(t *testing.T, body []byte) {
	in := bytes.Clone(body)
	got, err := includeUsage(body)
	want, wantErr := sjson.SetBytes(bytes.Clone(in), "stream_options.include_usage", true)
	if (err != nil) != (wantErr != nil) || (err == nil && string(got) != string(want)) {
		t.Fatalf("%q: %q (%v), sjson writes %q (%v)", in, got, err, want, wantErr)
	}
	if !bytes.Equal(body, in) {
		t.Fatalf("%q: the body changed to %q", in, body)
	}
}
