package chatcompletions

import (
	"strings"
	"testing"

	"modelgateway/core/wire/chatwire"
	"modelgateway/core/wire/strictjson"
)

// The request path's reading of a chat body: relay.ReadJSON's strictjson.Check, then Decode's
// decodeRequest, for the bench's request, an SDK's streamed request and a 4 KiB conversation.
func BenchmarkDecodeRequest(b *testing.B) {
	var conv strings.Builder
	conv.WriteString(`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[`)
	for i := range 40 {
		if i > 0 {
			conv.WriteByte(',')
		}
		conv.WriteString(`{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 3) + `"}`)
	}
	conv.WriteString(`]}`)
	for _, c := range []struct{ name, body string }{
		{"bench", fastSeeds[0].body},
		{"sdk", fastSeeds[1].body},
		{"4KiB", conv.String()},
	} {
		body := []byte(c.body)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var in chatwire.Request
				if err := strictjson.Check(body); err != nil {
					b.Fatal(err)
				}
				if err := decodeRequest(body, &in); err != nil || len(in.Messages) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
