package provider

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// rewriteBodies are passthrough bodies as clients and upstreams space them, with the model
// first, last, absent, duplicated, nested only, or not a string.
var rewriteBodies = []string{
	`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`,
	`{"messages":[{"role":"user","content":"hi","model":"inner"}],"model":"gpt-5"}`,
	"{\n  \"id\": \"chatcmpl-1\",\n  \"model\" :  \"sim-gpt-2025\" ,\n  \"choices\": []\n}",
	`{"model":"a","model":"b"}`,
	`{"model":"with \"escapes\" \u00e9"}`,
	`{"messages":[{"model":"inner"}]}`,
	`{"model":null}`,
	`{"model":42,"x":1}`,
	`{}`,
	`{"model":""}`,
}

var rewriteNames = []string{"sim-gpt", "org/z-model:v1", "gpt-5-mini-2025-08-07", "a<b>&c", "quote\"d", "é-model", "tab\tname", ""}

// SetModel writes what sjson writes, byte for byte, whichever path it takes.
func TestSetModelIsSjsons(t *testing.T) {
	t.Parallel()
	for _, body := range rewriteBodies {
		for _, name := range rewriteNames {
			want, wantErr := sjson.SetBytes([]byte(body), "model", name)
			got, err := SetModel([]byte(body), name)
			if (err != nil) != (wantErr != nil) || string(got) != string(want) {
				t.Errorf("SetModel(%s, %q) = %s, %v; sjson: %s, %v", body, name, got, err, want, wantErr)
			}
		}
	}
}

// PublicAnswerModel puts the public id where the upstream's was, encoded as encoding/json
// encodes it.
func TestPublicAnswerModelEncodesAsJSON(t *testing.T) {
	t.Parallel()
	for _, body := range rewriteBodies {
		for _, name := range rewriteNames {
			want := []byte(body)
			if m := gjson.Get(body, "model"); m.Type == gjson.String && m.Index > 0 && m.String() != name {
				quoted, _ := json.Marshal(name)
				want = append(append([]byte(body[:m.Index]), quoted...), body[m.Index+len(m.Raw):]...)
			}
			if got := PublicAnswerModel([]byte(body), "upstream-id", name); string(got) != string(want) {
				t.Errorf("PublicAnswerModel(%s, %q) = %s, want %s", body, name, got, want)
			}
		}
	}
}

// A passthrough rewrite allocates its output and nothing else: the model is found in place.
func TestRewritesAllocateOnlyTheirOutput(t *testing.T) {
	body := []byte(`{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`)
	answer := []byte("{\n  \"id\": \"chatcmpl-1\",\n  \"model\": \"sim-gpt-2025\",\n  \"choices\": []\n}")
	var out, ans []byte
	if n := testing.AllocsPerRun(100, func() { out, _ = SetModel(body, "sim-gpt") }); n != 1 {
		t.Errorf("SetModel: %v allocations, want 1 (the new body)", n)
	}
	if n := testing.AllocsPerRun(100, func() { ans = PublicAnswerModel(answer, "sim-gpt", "bench-gpt") }); n != 1 {
		t.Errorf("PublicAnswerModel: %v allocations, want 1 (the new answer)", n)
	}
	if string(out) != `{"model":"sim-gpt","messages":[{"role":"user","content":"hi"}]}` || !json.Valid(ans) || gjson.GetBytes(ans, "model").String() != "bench-gpt" {
		t.Errorf("rewrites: %s, %s", out, ans)
	}
	// Nothing to rewrite: nothing allocated.
	if n := testing.AllocsPerRun(100, func() { PublicAnswerModel(answer, "sim-gpt", "sim-gpt-2025") }); n != 0 {
		t.Errorf("PublicAnswerModel of an answer with the public id already: %v allocations, want 0", n)
	}
}

// RawField is the value's JSON text as GetBytes gives it, in body itself.
func TestRawFieldIsGetBytesRawInPlace(t *testing.T) {
	for _, body := range append(rewriteBodies, `{"usage":{"prompt_tokens":3,"completion_tokens":5}}`, `{"usage":null}`, `[1,2]`, ``, `not json`) {
		for _, path := range []string{"model", "usage", "messages", "usage.prompt_tokens", "0", "none"} {
			b := []byte(body)
			got, want := RawField(b, path), gjson.GetBytes(b, path).Raw
			if string(got) != want || (want == "") != (got == nil) {
				t.Errorf("RawField(%s, %s) = %q, want %q", body, path, got, want)
			}
			if len(got) > 0 && (&got[0] != &b[gjson.GetBytes(b, path).Index] || cap(got) != len(got)) {
				t.Errorf("RawField(%s, %s): a copy or an appendable slice, want the value's bytes in body", body, path)
			}
		}
	}
	usage := []byte(`{"usage":{"prompt_tokens":3}}`)
	if n := testing.AllocsPerRun(100, func() { RawField(usage, "usage") }); n != 0 {
		t.Errorf("RawField: %v allocations, want 0", n)
	}
}

// RenameAnswerModel writes what PublicAnswerModel writes, in the answer's own array when it
// has room (no allocation) and in a new one when not, for longer and shorter names alike.
func TestRenameAnswerModelIsPublicAnswerModel(t *testing.T) {
	for _, body := range rewriteBodies {
		for _, name := range rewriteNames {
			want := string(PublicAnswerModel([]byte(body), "upstream-id", name))
			for _, room := range []int{0, 64} {
				answer := append(make([]byte, 0, len(body)+room), body...)
				got := RenameAnswerModel(answer, "upstream-id", name)
				if string(got) != want {
					t.Errorf("RenameAnswerModel(%s, %q) with room %d = %s, want %s", body, name, room, got, want)
				}
				fits := want == body || (plainJSONString(name) && len(want) <= cap(answer))
				if inPlace := len(got) > 0 && len(answer) > 0 && &got[0] == &answer[0]; inPlace != fits {
					t.Errorf("RenameAnswerModel(%s, %q) with room %d: in place %v", body, name, room, inPlace)
				}
			}
		}
	}
	answer := []byte("{\n  \"id\": \"chatcmpl-1\",\n  \"model\": \"sim-gpt-2025\",\n  \"choices\": []\n}")
	buf := make([]byte, 0, len(answer)+answerRoom)
	if n := testing.AllocsPerRun(100, func() { RenameAnswerModel(append(buf[:0], answer...), "sim-gpt", "a-longer-public-model-name") }); n != 0 {
		t.Errorf("RenameAnswerModel with room: %v allocations, want 0", n)
	}
}
