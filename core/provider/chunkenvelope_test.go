package provider

import (
	"fmt"
	"strings"
	"testing"
)

// envelopeSeeds are chunkKeysSeeds and chunks of one chat stream, whose opening bytes the
// envelope shares; some put a key across where two chunks stop sharing their bytes.
var envelopeSeeds = append([]string{
	`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"up-gpt","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":" beta"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"up-gpt","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":"\"error\" \"usage\" :{"},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"up-gpt","system_fingerprint":"fp_0123456789","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":20,"total_tokens":25}}`,
	`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"up-gpt","system_fingerprint":"fp_0123456789","choices":[],"usage"` + strings.Repeat(" ", 40) + `:{}}`,
	`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"usage"   :   null, "model":"up-gpt","usage":{}}`,
	`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"error":{"message":"x"},"model":"m"}`,
}, chunkKeysSeeds...)

// A chunk after any other, after one that opens with its bytes cut anywhere, and a stream
// of chunks: the keys ScanChunk finds.
func TestChunkEnvelopeIsScanChunk(t *testing.T) {
	t.Parallel()
	check := func(e *ChunkEnvelope, data, after string) {
		t.Helper()
		if got, want := e.Scan([]byte(data)), chunkKeysRef([]byte(data)); got != want {
			t.Fatalf("%q after %q: %+v, want %+v", data, after, got, want)
		}
	}
	for _, a := range envelopeSeeds {
		for _, b := range envelopeSeeds {
			for k := range len(a) + 1 {
				var e ChunkEnvelope
				check(&e, a, "")
				check(&e, a[:k]+b, a)
				check(&e, a[:k]+b[min(k, len(b)):], a)
			}
		}
	}
	var e ChunkEnvelope
	for _, s := range envelopeSeeds[:6] {
		check(&e, s, "the stream's chunks")
	}
	// The stream's chunks after its first start after its envelope.
	if e.n < chunkEnvelopeMin || e.nc <= 0 {
		t.Fatalf("nothing recorded: %d bytes, %d candidates", e.n, e.nc)
	}
}

// FuzzChunkEnvelope: a chunk after any other and after one that opens with the same bytes
// (the first k of it, then a tail) has the keys ScanChunk finds.
//
//	go test -run x -fuzz FuzzChunkEnvelope -fuzztime 30s ./core/provider/
func FuzzChunkEnvelope(f *testing.F) {
	for i, s := range envelopeSeeds {
		f.Add([]byte(s), uint16(len(s)/2), []byte(envelopeSeeds[(i+1)%len(envelopeSeeds)]))
		f.Add([]byte(s), uint16(150), []byte(`"usage" :{`))
	}
	f.Fuzz(func(t *testing.T, a []byte, k uint16, tail []byte) {
		var e ChunkEnvelope
		b := append(a[:min(int(k), len(a)):min(int(k), len(a))], tail...)
		for _, data := range [][]byte{a, b, tail, a} {
			if got, want := e.Scan(data), chunkKeysRef(data); got != want {
				t.Fatalf("%q (after %q): %+v, the textual looks say %+v", data, a, got, want)
			}
		}
	})
}

// BenchmarkChunkEnvelope: a chat chunk's keys after a chunk of its stream, and ScanChunk's.
func BenchmarkChunkEnvelope(b *testing.B) {
	data := []byte(chunkKeysSeeds[0])
	b.Run("ScanChunk", func(b *testing.B) {
		for b.Loop() {
			if k := ScanChunk(data); k.Model < 0 {
				b.Fatal("no model")
			}
		}
	})
	b.Run("envelope", func(b *testing.B) {
		var e ChunkEnvelope
		for b.Loop() {
			if k := e.Scan(data); k.Model < 0 {
				b.Fatal(fmt.Sprint("no model ", e.n))
			}
		}
	})
}
