package chatcompletions

import (
	"net/http/httptest"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/chatwire"
)

// The spliced text chunk is byte for byte the chunk the general encoder writes.
func TestTextChunkMatchesTheGeneralEncoder(t *testing.T) {
	t.Parallel()
	for _, text := range []string{"plain", `quote " and \ backslash`, "<html> & more", "line\nbreak\ttab\u2028sep", "bad \xff utf-8", "emoji 🙂"} {
		start := &corev1.Start{Id: "x", Model: "m/1", Created: 7}
		fast, slow := httptest.NewRecorder(), httptest.NewRecorder()
		ef, es := &streamEncoder{w: fast}, &streamEncoder{w: slow}
		if err := ef.Start(start); err != nil {
			t.Fatal(err)
		}
		if err := es.Start(start); err != nil {
			t.Fatal(err)
		}
		if err := ef.text(text); err != nil {
			t.Fatal(err)
		}
		tt := text
		if err := es.delta(chatwire.Delta{Content: &tt}); err != nil {
			t.Fatal(err)
		}
		if fast.Body.String() != slow.Body.String() {
			t.Errorf("%q:\nfast %s\nslow %s", text, fast.Body, slow.Body)
		}
	}
}

func TestUsageObjectLooksOnlyForAnObject(t *testing.T) {
	t.Parallel()
	cases := []struct {
		chunk string
		want  bool
	}{
		{`{"choices":[{"delta":{"content":"hi"}}],"usage":null}`, false},
		{`{"choices":[],"usage":{"prompt_tokens":5}}`, true},
		{`{"choices":[],"usage" : {"prompt_tokens":5}}`, true},
		{`{"choices":[{"delta":{"content":"the \"usage\" word"}}]}`, false},
		{`{"choices":[]}`, false},
	}
	for _, c := range cases {
		if got := usageObject([]byte(c.chunk)); got != c.want {
			t.Errorf("usageObject(%s) = %v, want %v", c.chunk, got, c.want)
		}
	}
}
