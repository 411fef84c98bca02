package media

import "testing"

// The head of a JSON media body (after relay.ReadJSON).
func BenchmarkJSONHead(b *testing.B) {
	body := []byte(`{"model":"tts-1","input":"The quick brown fox jumped over the lazy dog.","voice":"alloy","response_format":"mp3","speed":1.0}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := jsonHead("audio.speech", body); err != nil {
			b.Fatal(err)
		}
	}
}
