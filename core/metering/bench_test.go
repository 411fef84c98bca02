package metering

import "testing"

// The usage of every chat answer, passthrough or translated.
func BenchmarkFromOpenAIChat(b *testing.B) {
	raw := []byte(`{"prompt_tokens":1200,"completion_tokens":345,"total_tokens":1545,"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":128,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}`)
	b.ReportAllocs()
	for b.Loop() {
		if u := FromOpenAIChat(raw); !u.Reliable {
			b.Fatal(u.Why)
		}
	}
}
