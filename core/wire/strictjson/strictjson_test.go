package strictjson

import (
	"strings"
	"testing"
)

// Check passes what every reader reads alike and refuses the rest, at any depth.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, err string // err: a part of the message; "" passes
	}{
		{`{"model":"m","max_tokens":5}`, ""},
		{`{"MAX_TOKENS":1,"max_tokens":3000}`, ""}, // two names: the reader decides (Unmarshal)
		{`{"mo\u0064el":"m","x":"caf\u00e9 \n"}`, ""},
		{`[{"a":1},{"a":2}]`, ""},
		{`{"a":{"b":1},"c":{"b":2}}`, ""},
		{`{"model":"a","model":"b"}`, `the member "model" appears twice in one object (the body)`},
		{`{"stream_options":{"include_usage":true},"stream_options":{"include_usage":false}}`, `"stream_options" appears twice`},
		{`{"model":"a","mo\u0064el":"b"}`, `"model" appears twice`},
		{`{"messages":[{"role":"user","content":"x","content":"y"}]}`, `"content" appears twice in one object (messages.0)`},
		{`{"tools":[{"function":{"parameters":{"properties":{"a":{},"a":{}}}}}]}`, `"a" appears twice`},
		{`{"a":1} {"a":2}`, "more than one value"},
		{"{\"a\":\"\xff\"}", "not valid JSON"},
		{`{"a":"\ud800"}`, "not valid JSON"},
		{`{"a":1`, "not valid JSON"},
		{``, "not valid JSON: the text is empty"},
	} {
		err := Check([]byte(tc.body))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.body, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: got %v, want %q", tc.body, err, tc.err)
		}
	}
}

// Unmarshal matches names exactly: a case variant is an unknown member, as upstream.
func TestUnmarshalMatchesNamesExactly(t *testing.T) {
	t.Parallel()
	type req struct {
		Model     string `json:"model"`
		MaxTokens *int64 `json:"max_tokens"`
	}
	var r req
	if err := Unmarshal([]byte(`{"model":"m","max_tokens":3000}`), &r); err != nil || r.MaxTokens == nil || *r.MaxTokens != 3000 {
		t.Fatalf("exact names: %+v %v", r, err)
	}
	r = req{}
	if err := Unmarshal([]byte(`{"Model":"m","MAX_TOKENS":1}`), &r); err != nil || r.Model != "" || r.MaxTokens != nil {
		t.Fatalf("case variants must be unknown members: %+v %v", r, err)
	}
	if err := Unmarshal([]byte(`{"max_tokens":"5"}`), &r); err == nil || err.Error() != "max_tokens must be an integer, not a string" {
		t.Fatalf("type error: %v", err)
	}
	if err := Unmarshal([]byte(`{"model":"a","model":"b"}`), &r); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("duplicates: %v", err)
	}
}

// The one reading's cost on every JSON body: Check of the bench's chat request and of an SDK's
// 4 KiB conversation.
func BenchmarkCheck(b *testing.B) {
	small := []byte(`{"model":"bench-gpt","messages":[{"role":"user","content":"hello #sim:input=20000"}]}`)
	var conv strings.Builder
	conv.WriteString(`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[`)
	for i := range 40 {
		if i > 0 {
			conv.WriteByte(',')
		}
		conv.WriteString(`{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 3) + `"}`)
	}
	conv.WriteString(`]}`)
	for _, c := range []struct {
		name string
		body []byte
	}{{"bench", small}, {"4KiB", []byte(conv.String())}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := Check(c.body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
