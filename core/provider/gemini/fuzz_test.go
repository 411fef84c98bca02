package gemini

import (
	"bytes"
	"os"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

// FuzzUpstreamAnswer runs any upstream body through the SSE reader and both stream decoders
// (translated and native), and through the whole-answer and embedding decoders. Seeds:
// testdata/.
func FuzzUpstreamAnswer(f *testing.F) {
	for _, name := range []string{"text_thoughts.sse", "tool_call_split_finish.sse", "error_chunk.sse", "prompt_blocked.sse",
		"batch_embed_answer.json", "embed_content_answer.json"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dec := range []provider.Decoder{newDecoder(), &nativeDecoder{upstream: "up", public: "pub"}} {
			rd := sse.NewReader(bytes.NewReader(body))
			for range 10000 {
				ev, err := rd.Next()
				if err != nil {
					break
				}
				if _, done, err := dec.Decode(ev); err != nil || done {
					break
				}
			}
			rd.Release()
		}
		_, _ = decodeWhole(&provider.Call{}, body, newDecoder())
		_, _ = decodeBatchEmbed(body, 2)
	})
}
