package rpc

import (
	"strings"

	"github.com/tidwall/gjson"
)

// realtimeAudioBytesPerToken bounds the audio tokens of a realtime response's audio deltas
// from their base64 text. Upstreams count output audio at about 50 tokens a second (OpenAI's
// realtime models: about 0.24 USD a minute at 80 USD per 1M tokens); a second of the densest
// format, pcm16 at 24 kHz, is 64,000 base64 bytes and of the sparsest, G.711 at 8 kHz, 10,667:
// 128 bytes a token bounds both from above (500 and 83 tokens a second).
const realtimeAudioBytesPerToken = 128

// realtimeOutputBound is an upper bound of the output tokens a realtime server event
// delivers (running.go): the bytes of a text, transcript or tool-arguments delta, and the
// audio of an audio delta at realtimeAudioBytesPerToken. Other events deliver nothing new
// (the *.done events repeat what their deltas delivered).
func realtimeOutputBound(typ string, data []byte) int64 {
	if !strings.HasPrefix(typ, "response.") || !strings.HasSuffix(typ, ".delta") {
		return 0
	}
	// The delta as it appears in the JSON, escapes included (at least the bytes it decodes
	// to), without its quotes.
	delta := int64(max(len(gjson.GetBytes(data, "delta").Raw)-2, 0))
	if typ == "response.output_audio.delta" || typ == "response.audio.delta" {
		return delta/realtimeAudioBytesPerToken + 1
	}
	return delta
}
