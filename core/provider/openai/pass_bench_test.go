package openai

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// The passthrough decoder's cost per chunk: an include_usage stream (every chunk carries
// "usage":null) whose model the gateway renames, of 20 and of 120 content chunks; the
// difference of the two is the chunks alone.
func BenchmarkPassDecoderPerChunk(b *testing.B) {
	for _, n := range []int{20, 120} {
		var rec bytes.Buffer
		rec.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up-gpt","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n")
		for i := range n {
			fmt.Fprintf(&rec, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up-gpt","choices":[{"index":0,"delta":{"content":"w%d "},"finish_reason":null}],"usage":null}`+"\n\n", i)
		}
		rec.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up-gpt","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n")
		rec.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"up-gpt","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":20,"total_tokens":25}}` + "\n\n")
		rec.WriteString("data: [DONE]\n\n")
		data := rec.Bytes()
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			r := bytes.NewReader(nil)
			for b.Loop() {
				r.Reset(data)
				s, start := passStream(io.NopCloser(r), "up-gpt", "bench-gpt") // as passthrough makes it
				start.Passthrough = true
				events := 0
				for {
					_, err := s.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
				s.Close()
				if events != n+5 || s.Usage().Output != 20 {
					b.Fatalf("%d events, usage %+v", events, s.Usage())
				}
			}
		})
	}
}
