package anthropic

import (
	"bytes"
	"os"
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

// FuzzUpstreamAnswer runs any upstream body through the SSE reader and both stream decoders
// (translated and passthrough), and through the message decoder. Seeds: testdata/.
func FuzzUpstreamAnswer(f *testing.F) {
	for _, name := range []string{"text_tool.sse", "thinking_tools.sse", "stop_sequence.sse", "error_first.sse", "error_mid.sse", "cut.sse", "message.json"} {
		if b, err := os.ReadFile("testdata/" + name); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dec := range []provider.Decoder{&streamDecoder{start: &corev1.Start{}, blockTool: map[int]*toolBlock{}}, &passthroughDecoder{upstream: "up", public: "pub"}} {
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
		_, _ = decodeMessage(body, &corev1.Start{})
	})
}
