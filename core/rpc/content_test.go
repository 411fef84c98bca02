package rpc

import (
	"fmt"
	"testing"
)

// A stream's chunks share their envelope: from the second on, the count starts after it, and
// is contentBytes' count of each chunk all the same, whatever the chunk before.
func TestEnvelopeCountsAsContentBytes(t *testing.T) {
	chunk := func(content string) string {
		return `{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":"` + content + `"},"logprobs":null,"finish_reason":null}],"usage":null}`
	}
	var e envelope
	if got := e.contentBytes([]byte(chunk(""))); got != 0 {
		t.Fatalf("first chunk: %d", got)
	}
	if e.n == 0 || e.at == 0 {
		t.Fatalf("no envelope recorded: %+v", e)
	}
	at := e.at
	for i, c := range []string{" alpha", "", `\"quoted\"`, "é", " beta gamma"} {
		data := []byte(chunk(c))
		if got, want := e.contentBytes(data), contentBytes(data); got != want || e.at != at {
			t.Fatalf("chunk %d: %d, contentBytes counts %d (envelope at %d, was %d)", i, got, want, e.at, at)
		}
	}
	// Another stream's shape: recorded anew, and counted as contentBytes counts it.
	for _, s := range contentSeeds {
		if got, want := e.contentBytes([]byte(s)), contentBytes([]byte(s)); got != want {
			t.Fatalf("%s: %d, contentBytes counts %d", s, got, want)
		}
	}
}

// FuzzEnvelope: a chunk after any other, and after one that opens with the same bytes (its
// first k, then a tail of its own), is counted as contentBytes counts it.
//
//	go test -run x -fuzz FuzzEnvelope -fuzztime 30s ./core/rpc/
func FuzzEnvelope(f *testing.F) {
	for i, s := range contentSeeds {
		f.Add([]byte(s), uint16(len(s)/2), []byte(contentSeeds[(i+1)%len(contentSeeds)]))
		f.Add([]byte(s), uint16(len(s)), []byte(`"content":"x"}`))
	}
	f.Fuzz(func(t *testing.T, a []byte, k uint16, tail []byte) {
		var e envelope
		if got, want := e.contentBytes(a), contentBytesRef(a); got != want {
			t.Fatalf("%q: %d, the byte scan counts %d", a, got, want)
		}
		b := append(a[:min(int(k), len(a)):min(int(k), len(a))], tail...)
		if got, want := e.contentBytes(b), contentBytesRef(b); got != want {
			t.Fatalf("%q after %q: %d, the byte scan counts %d", b, a, got, want)
		}
		if got, want := e.contentBytes(tail), contentBytesRef(tail); got != want {
			t.Fatalf("%q after %q: %d, the byte scan counts %d", tail, b, got, want)
		}
	})
}

// Every seed after every other, and after each of its own cuts (the envelope's bytes then a
// different tail).
func TestEnvelopeAfterEverySeed(t *testing.T) {
	for _, a := range contentSeeds {
		for _, b := range contentSeeds {
			for k := range len(a) + 1 {
				var e envelope
				e.contentBytes([]byte(a))
				c := a[:k] + b
				if got, want := e.contentBytes([]byte(c)), contentBytesRef([]byte(c)); got != want {
					t.Fatalf("%q after %q: %d, the byte scan counts %d", c, a, got, want)
				}
			}
		}
	}
}

// BenchmarkEnvelope: contentBytes of a chat chunk, and the envelope's count of it after a
// chunk of the same stream.
func BenchmarkEnvelope(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":" alpha"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	b.Run("contentBytes", func(b *testing.B) {
		for b.Loop() {
			if contentBytes(data) != 6 {
				b.Fatal("wrong count")
			}
		}
	})
	b.Run("envelope", func(b *testing.B) {
		var e envelope
		for b.Loop() {
			if e.contentBytes(data) != 6 {
				b.Fatal(fmt.Sprint("wrong count ", e.at))
			}
		}
	})
}
