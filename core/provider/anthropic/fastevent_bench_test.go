package anthropic

import "testing"

// The two events of every stream read by readStreamEvent.
func BenchmarkReadStreamEvent(b *testing.B) {
	for _, c := range []struct{ name, data string }{
		{"message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`},
		{"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`},
	} {
		data := []byte(c.data)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := readStreamEvent(data); !ok {
					b.Fatal("not read")
				}
			}
		})
	}
}
