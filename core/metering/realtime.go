package metering

import "github.com/tidwall/gjson"

// FromRealtimeResponse normalises the usage of a realtime response.done event (the whole
// event): input_tokens includes the cached ones, text and audio alike. Only a completed or
// incomplete response carries usage that can be charged; a cancelled or failed one may still
// report what it consumed, and that is charged too, since the upstream bills it.
func FromRealtimeResponse(event []byte) Usage {
	u := gjson.GetBytes(event, "response.usage")
	if !u.IsObject() {
		return Unreliable("response.done without usage")
	}
	in, out := u.Get("input_tokens"), u.Get("output_tokens")
	if in.Type != gjson.Number || out.Type != gjson.Number {
		return Unreliable("response.done usage without token counts")
	}
	res := fromInclusive(in.Int(), u.Get("input_token_details.cached_tokens").Int(), 0, out.Int(), 0)
	if total := u.Get("total_tokens"); res.Reliable && total.Exists() && total.Int() != in.Int()+out.Int() {
		return contradiction("total %d is not input %d + output %d", total.Int(), in.Int(), out.Int())
	}
	if !res.Reliable {
		return res
	}
	// Audio parts: uncached audio input, and audio output.
	audioIn := u.Get("input_token_details.audio_tokens").Int() - u.Get("input_token_details.cached_tokens_details.audio_tokens").Int()
	audioOut := u.Get("output_token_details.audio_tokens").Int()
	if audioIn < 0 || audioIn > res.Input || audioOut < 0 || audioOut > res.Output {
		return contradiction("audio tokens (%d in, %d out) outside input %d and output %d", audioIn, audioOut, res.Input, res.Output)
	}
	res.AudioInput, res.AudioOutput = audioIn, audioOut
	return res
}
