package metering

import "github.com/tidwall/gjson"

// FromMediaAnswer reads the usage of a forwarded media or ranking answer (the whole JSON body):
//   - rerank: usage.total_tokens (Jina style) is input; Cohere's search units are not tokens
//     and leave the record unreliable;
//   - images: usage.input_tokens and output_tokens (GPT image models; DALL·E reports none);
//   - transcriptions and translations: usage of type "tokens"; a "duration" usage is seconds,
//     not tokens, and leaves the record unreliable;
//   - moderations and speech report nothing.
//
// Unreliable records are charged only at a per-request price.
func FromMediaAnswer(family string, body []byte) Usage {
	u := gjson.GetBytes(body, "usage")
	if !u.IsObject() {
		return Unreliable("no usage reported")
	}
	count := func(path string) (int64, bool) {
		v := u.Get(path)
		if v.Type != gjson.Number || v.Int() < 0 {
			return 0, false
		}
		return v.Int(), true
	}
	switch family {
	case "rerank":
		if n, ok := count("total_tokens"); ok {
			return Usage{Input: n, Reliable: true}
		}
	case "images.generations", "images.edits", "images.variations", "audio.transcriptions", "audio.translations":
		if t := u.Get("type"); t.Exists() && t.String() != "tokens" {
			return Unreliable("usage of type " + t.String() + " is not in tokens")
		}
		in, okIn := count("input_tokens")
		out, okOut := count("output_tokens")
		if okIn && okOut {
			if total, ok := count("total_tokens"); ok && total != in+out {
				return contradiction("total %d is not input %d + output %d", total, in, out)
			}
			audio := u.Get("input_tokens_details.audio_tokens").Int()
			if audio < 0 || audio > in {
				return contradiction("audio tokens %d outside input %d", audio, in)
			}
			return Usage{Input: in, Output: out, AudioInput: audio, Reliable: true}
		}
	}
	return Unreliable("no token usage reported")
}
