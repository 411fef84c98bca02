package openai

import (
	"bytes"
	"testing"

	"github.com/tidwall/sjson"

	"modelgateway/core/provider"
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
	if n := testing.AllocsPerRun(100, func() { _, _ = includeUsage(body, false) }); n != 1 {
		t.Fatalf("%v allocations for a body without stream_options, want its copy only", n)
	}
	// A body SetModelRoom renamed has the member's room: renamed and given stream_options in
	// one allocation, the bytes sjson writes after SetModel.
	var out []byte
	if n := testing.AllocsPerRun(100, func() {
		out, _ = provider.SetModelRoom(body, "up-model", len(includeUsageMember)+1)
		out, _ = includeUsage(out, true)
	}); n != 1 {
		t.Fatalf("%v allocations to rename and add stream_options, want 1", n)
	}
	renamed, _ := provider.SetModel(body, "up-model")
	want, _ := sjson.SetBytes(renamed, "stream_options.include_usage", true)
	if string(out) != string(want) {
		t.Fatalf("%s, want %s", out, want)
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
	want, wantErr := sjson.SetBytes(bytes.Clone(in), "stream_options.include_usage", true)
	got, err := includeUsage(body, false)
	if (err != nil) != (wantErr != nil) || (err == nil && string(got) != string(want)) {
		t.Fatalf("%q: %q (%v), sjson writes %q (%v)", in, got, err, want, wantErr)
	}
	if !bytes.Equal(body, in) {
		t.Fatalf("%q: the body changed to %q", in, body)
	}
	// An owned body, with and without room: the same bytes.
	for _, room := range []int{0, len(includeUsageMember) + 1} {
		owned := append(make([]byte, 0, len(in)+room), in...)
		got, err := includeUsage(owned, true)
		if (err != nil) != (wantErr != nil) || (err == nil && string(got) != string(want)) {
			t.Fatalf("%q owned, room %d: %q (%v), sjson writes %q (%v)", in, room, got, err, want, wantErr)
		}
	}
}
