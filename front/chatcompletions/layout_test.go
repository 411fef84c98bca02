package chatcompletions

import (
	"strings"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/jsontext"
	"modelgateway/front/relay"
)

// The spliced chunks are byte for byte the chunks encoded whole, whatever the id and model.
func TestLayoutChunksAreTheEncodedChunks(t *testing.T) {
	t.Parallel()
	for _, s := range []*corev1.Start{
		{Id: "msg_01", Model: "team/gpt", Created: 1730000000},
		{Id: `a"b\c`, Model: "m <b>&</b> é 😀 \u2028", Created: 1},
		{Model: "", Created: 0},
		// Longer than the layout's room: its head grows away from it.
		{Id: strings.Repeat("i", 120), Model: strings.Repeat("m", 120), Created: 1},
	} {
		e := &streamEncoder{head: newHead(s)}
		l := new(layout)
		l.init(e.stamp(chatwire.Chunk{}))
		whole := func(c chatwire.Chunk) string {
			b, err := jsontext.Marshal(e.stamp(c))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		empty, text, reason := "", "Hel\"lo\n <b>&</b> \u2028 😀", chatwire.FinishToolCalls
		u := &corev1.Usage{InputTokens: 1, OutputTokens: 2, Cost: "0.5", Currency: "RUB"}
		raw, err := jsontext.Marshal(usage(u))
		if err != nil {
			t.Fatal(err)
		}
		raw = relay.AddCost(raw, "", u)
		for name, c := range map[string]struct{ got, want string }{
			"role":   {string(l.role(nil)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{{Delta: chatwire.Delta{Role: "assistant", Content: &empty}}}})},
			"text":   {string(l.text(nil, text)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{{Delta: chatwire.Delta{Content: &text}}}})},
			"finish": {string(l.finish(nil, reason)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{{FinishReason: &reason}}})},
			"usage":  {string(l.usage(nil, u)), whole(chatwire.Chunk{Choices: []chatwire.ChunkChoice{}, Usage: raw})},
		} {
			if c.got != c.want {
				t.Errorf("%s chunk of %v:\n got %s\nwant %s", name, s, c.got, c.want)
			}
		}
	}
}

// The usage object is written as encoding/json writes the chat usage, with the cost spliced
// in as relay.AddCost splices it: every category, the cache write shown only when there is
// one, the cost only when there is one to show.
func TestUsageIsTheEncodedUsageWithItsCost(t *testing.T) {
	t.Parallel()
	for name, u := range map[string]*corev1.Usage{
		"no usage event":        nil,
		"plain":                 {InputTokens: 12, OutputTokens: 20},
		"every category":        {InputTokens: 5, CachedInputTokens: 100, CacheWriteTokens: 7, OutputTokens: 9, ReasoningTokens: 4},
		"with its cost":         {InputTokens: 12, OutputTokens: 20, Cost: "0.000052", Currency: "RUB"},
		"a cost without a unit": {InputTokens: 1, Cost: "0.1"},
		"not a plain decimal":   {InputTokens: 1, Cost: "1e5", Currency: "USD"},
		"large counts":          {InputTokens: 1 << 40, CachedInputTokens: 3, OutputTokens: 1 << 41, ReasoningTokens: 1 << 40, Cost: "123456.789", Currency: "USD"},
	} {
		raw, err := jsontext.Marshal(usage(u))
		if err != nil {
			t.Fatal(err)
		}
		want := string(relay.AddCost(raw, "", u))
		if got := string(appendUsage(nil, u)); got != want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
}

// The usage chunk is written without an allocation of its own: NewUsage's details, returned
// from usage(), were two per stream.
func TestUsageChunkAllocatesNothing(t *testing.T) {
	u := &corev1.Usage{InputTokens: 5, CachedInputTokens: 100, OutputTokens: 9, ReasoningTokens: 4, Cost: "0.000052", Currency: "RUB"}
	var l layout
	l.init(chatwire.Chunk{ID: "chatcmpl-1", Object: chatwire.ObjectChunk, Created: 1, Model: "m"})
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = l.usage(buf[:0], u) }); n != 0 {
		t.Fatalf("%v allocations per usage chunk, want 0", n)
	}
}
