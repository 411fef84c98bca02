package metering

import "testing"

func TestFromMediaAnswer(t *testing.T) {
	cases := []struct {
		name, family, body string
		want               Usage
	}{
		{"jina rerank tokens", "rerank", `{"results":[],"usage":{"total_tokens":21}}`, Usage{Input: 21, Reliable: true}},
		{"cohere search units are not tokens", "rerank", `{"results":[],"meta":{"billed_units":{"search_units":1}}}`, Usage{}},
		{"gpt image", "images.generations", `{"data":[],"usage":{"total_tokens":1100,"input_tokens":50,"output_tokens":1050,"input_tokens_details":{"text_tokens":50,"image_tokens":0}}}`,
			Usage{Input: 50, Output: 1050, Reliable: true}},
		{"image edit", "images.edits", `{"usage":{"input_tokens":300,"output_tokens":4160}}`, Usage{Input: 300, Output: 4160, Reliable: true}},
		{"dall-e reports nothing", "images.generations", `{"created":1,"data":[{"url":"u"}]}`, Usage{}},
		{"contradictory total", "images.generations", `{"usage":{"total_tokens":10,"input_tokens":50,"output_tokens":1050}}`, Usage{}},
		{"transcription tokens", "audio.transcriptions", `{"text":"hi","usage":{"type":"tokens","input_tokens":14,"output_tokens":45,"total_tokens":59,"input_tokens_details":{"text_tokens":4,"audio_tokens":10}}}`,
			Usage{Input: 14, Output: 45, AudioInput: 10, Reliable: true}},
		{"whisper duration", "audio.transcriptions", `{"text":"hi","usage":{"type":"duration","seconds":3}}`, Usage{}},
		{"plain text transcript", "audio.transcriptions", "hello there\n", Usage{}},
		{"negative count", "images.edits", `{"usage":{"input_tokens":-1,"output_tokens":2}}`, Usage{}},
		{"moderations report nothing", "moderations", `{"id":"modr-1","results":[]}`, Usage{}},
		{"usage on a family that has none", "moderations", `{"usage":{"total_tokens":5}}`, Usage{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FromMediaAnswer(c.family, []byte(c.body))
			got.Why = ""
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if !got.Reliable && FromMediaAnswer(c.family, []byte(c.body)).Why == "" {
				t.Error("an unreliable record must say why")
			}
		})
	}
}

func TestFromRealtimeResponse(t *testing.T) {
	cases := []struct {
		name, event string
		want        Usage
	}{
		{"cached inside input", `{"type":"response.done","response":{"status":"completed","usage":{"total_tokens":420,"input_tokens":300,"output_tokens":120,
			"input_token_details":{"cached_tokens":128,"text_tokens":100,"audio_tokens":200,"cached_tokens_details":{"text_tokens":64,"audio_tokens":64}},
			"output_token_details":{"text_tokens":30,"audio_tokens":90}}}}`, Usage{Input: 172, CachedInput: 128, Output: 120, AudioInput: 136, AudioOutput: 90, Reliable: true}},
		{"audio beyond output", `{"type":"response.done","response":{"usage":{"input_tokens":10,"output_tokens":5,"output_token_details":{"audio_tokens":6}}}}`, Usage{}},
		{"no details", `{"type":"response.done","response":{"usage":{"input_tokens":10,"output_tokens":5}}}`, Usage{Input: 10, Output: 5, Reliable: true}},
		{"no usage", `{"type":"response.done","response":{"status":"cancelled","usage":null}}`, Usage{}},
		{"cached above input", `{"type":"response.done","response":{"usage":{"input_tokens":10,"output_tokens":5,"input_token_details":{"cached_tokens":11}}}}`, Usage{}},
		{"total disagrees", `{"type":"response.done","response":{"usage":{"total_tokens":16,"input_tokens":10,"output_tokens":5}}}`, Usage{}},
		{"counts missing", `{"type":"response.done","response":{"usage":{"total_tokens":16}}}`, Usage{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := FromRealtimeResponse([]byte(c.event))
			got.Why = ""
			if got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}
