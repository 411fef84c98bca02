package chatcompletions

import (
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
)

// The spliced chunks are byte for byte the chunks encoded whole, whatever the id and model.
func TestLayoutChunksAreTheEncodedChunks(t *testing.T) {
	t.Parallel()
	for _, s := range []*corev1.Start{
		{Id: "msg_01", Model: "team/gpt", Created: 1730000000},
		{Id: `a"b\c`, Model: "m <b>&</b> é 😀 \u2028", Created: 1},
		{Model: "", Created: 0},
	} {
		e := &streamEncoder{head: newHead(s)}
		l := newLayout(e.stamp(chatwire.Chunk{}))
		whole := func(c chatwire.Chunk) string {
			b, err := jsontext.Marshal(e.stamp(c))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		empty, text, reason := "", "Hel\"lo\n <b>&</b> \u2028 😀", chatwire.FinishToolCalls
		raw := []byte(`{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}`)
		for name, c := range map[string]struct{ got, want string }{
			"role":   {string(l.role(nil)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{{Delta: chatwire.Delta{Role: "assistant", Content: &empty}}}})},
			"text":   {string(l.text(nil, text)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{{Delta: chatwire.Delta{Content: &text}}}})},
			"finish": {string(l.finish(nil, reason)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{{FinishReason: &reason}}})},
			"usage":  {string(l.usage(nil, raw)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{}, Usage: raw})},
		} {
			if c.got != c.want {
				t.Errorf("%s chunk of %v:\n got %s\nwant %s", name, s, c.got, c.want)
			}
		}
	}
}
