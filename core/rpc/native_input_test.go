package rpc

import (
	"testing"
)

// nativeInputSeeds are first chunks of the passthrough protocols, and keys that gjson reads
// through escapes or finds nested.
var nativeInputSeeds = []string{
	`{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":25,"cache_read_input_tokens":7,"cache_creation_input_tokens":3,"output_tokens":1}}}`,
	`{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}],"usageMetadata":{"promptTokenCount":31,"candidatesTokenCount":1}}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}`,
	`{"type":"response.created","response":{"id":"resp_1","usage":null}}`,
	`{"mess\u0061ge":{"usage":{"input_tokens":9}}}`,
	`{"usage\u004detadata":{"promptTokenCount":12}}`,
	`{"x":{"message":{"usage":{"input_tokens":9}}},"content":"\"message\""}`,
	`{"message":{"usage":{"input_tokens":"12"}}}`,
	`[{"message":{"usage":{"input_tokens":4}}}]`,
	`{"message":{"usage":{"input_tokens":4}}`,
	``,
}

// nativeInput's first look skips gjson only where gjson finds nothing: the same count on
// every chunk, the seeds' and arbitrary ones.
func TestNativeInputAgreesWithGJSON(t *testing.T) {
	want := []int64{35, 31, 0, 0, 9, 12, 0, 12, 0, 4, 0}
	for i, s := range nativeInputSeeds {
		if got, ref := nativeInput([]byte(s)), nativeInputGJSON([]byte(s)); got != ref || got != want[i] {
			t.Errorf("%s: %d, gjson %d, want %d", s, got, ref, want[i])
		}
	}
}

func FuzzNativeInput(f *testing.F) {
	for _, s := range nativeInputSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, ref := nativeInput(data), nativeInputGJSON(data); got != ref {
			t.Fatalf("%q: %d, gjson reads %d", data, got, ref)
		}
	})
}

// BenchmarkNativeInput: the first look at a chat stream's first chunk (no count in it).
func BenchmarkNativeInput(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`)
	for b.Loop() {
		if nativeInput(data) != 0 {
			b.Fatal("a count")
		}
	}
}
