package openai

import (
	"bytes"
	"os"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

// FuzzUpstreamAnswer runs any upstream body through the SSE reader and every stream decoder of
// the package (chat translated and passthrough, responses), and through the non-streaming
// answer decoder: nothing an upstream sends may panic the gateway. Seeds: the golden streams
// and answers of testdata/.
func FuzzUpstreamAnswer(f *testing.F) {
	for _, name := range []string{"chat_text.sse", "chat_tools.sse", "chat_reasoning.sse", "chat_error.sse", "chat_cut.sse",
		"chat_forced_tool.sse", "responses_stream.sse", "completions_text.sse", "chat_answer.json", "completions_answer.json",
		"responses_nonstream.json", "embeddings_float.json", "embeddings_base64.json"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dec := range []provider.Decoder{&chatDecoder{}, &passDecoder{upstream: "up", public: "pub"}, &responsesDecoder{upstream: "up", public: "pub"}} {
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
		_, _ = decodeAnswer(body, &corev1.Start{})
		_, _ = decodeEmbeddings(body, 2)
	})
}
