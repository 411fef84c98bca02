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
	msg := `{"role":"user","content":"` + strings.Repeat("lorem ipsum dolor sit amet ", 3) + `"},`
	conv := `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[` +
		strings.TrimSuffix(strings.Repeat(msg, 40), ",") + `]}`
	for _, c := range []struct{ name, body string }{
		{"bench", fastSeeds[0].body},
		{"sdk", fastSeeds[1].body},
		{"4KiB", conv},
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

// BenchmarkDecode is Decode whole (the body read into the canonical request) for the bench's
// request.
func BenchmarkDecode(b *testing.B) {
	body := []byte(fastSeeds[0].body)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Protocol{}).Decode(nil, body); err != nil {
			b.Fatal(err)
		}
	}
}
