package provider

import (
	"fmt"
	"strings"
	"testing"
)

// Chunks renames as PublicModel does, and every chunk it handed out stays as it was while
// later ones are renamed (a decoder keeps the usage chunk), appends included.
func TestChunksKeepEveryChunk(t *testing.T) {
	t.Parallel()
	var c Chunks
	var kept, want [][]byte
	for i := range 200 {
		chunk := fmt.Sprintf(`{"id":"c","model":"up-gpt","choices":[{"delta":{"content":"%s"}}]}`, strings.Repeat("x", i*13%700))
		switch i % 50 {
		case 7:
			chunk = `{"model":"up-gpt","content":"` + strings.Repeat("y", 3000) + `"}` // larger than a quarter block
		case 9:
			chunk = `{"model":"bench-gpt"}` // already public: left as it is
		case 11:
			chunk = `{"no":"model"}`
		}
		got := c.PublicModel([]byte(chunk), "up-gpt", "bench-gpt")
		w := PublicModel([]byte(chunk), "up-gpt", "bench-gpt")
		if string(got) != string(w) {
			t.Fatalf("chunk %d: %s, want %s", i, got, w)
		}
		if n := len(kept); n > 0 {
			_ = append(kept[n-1], "clobber"...)
		}
		kept, want = append(kept, got), append(want, append([]byte(nil), w...))
	}
	for i := range kept {
		if string(kept[i]) != string(want[i]) {
			t.Fatalf("chunk %d changed: %.60s, want %.60s", i, kept[i], want[i])
		}
	}
	if got := string(c.PublicModel([]byte(`{"model":"up-gpt"}`), "up-gpt", "up-gpt")); got != `{"model":"up-gpt"}` {
		t.Errorf("same names: %s", got)
	}
}

// Lent renames as PublicModel does, into one buffer used again for every chunk, and hands a
// chunk that keeps its model on as it is: with its room, a stream's chunks and events cost
// no allocation at all. Each is valid until the next (what Generate's consumers are told).
func TestLentRenamesEachChunkInOneBuffer(t *testing.T) {
	var l Lent
	l.Room(make([]byte, 0, 512))
	for i, chunk := range []string{
		`{"id":"c","model":"up-gpt","choices":[]}`,
		`{"model":"bench-gpt"}`,
		`{"no":"model"}`,
		`{"model":"up-gpt","content":"` + strings.Repeat("y", 3000) + `"}`,
		`{"model":"up-gpt"}`,
	} {
		ev := l.Event("e", []byte(chunk), "up-gpt", "bench-gpt")
		got, want := ev.GetNative().GetData(), PublicModel([]byte(chunk), "up-gpt", "bench-gpt")
		if string(got) != string(want) || ev.GetNative().GetEvent() != "e" {
			t.Fatalf("chunk %d: %.60s, want %.60s", i, got, want)
		}
		if renamed := string(want) != chunk; renamed && cap(got) != len(got) {
			t.Fatalf("chunk %d: an append could reach the buffer beyond it", i)
		}
	}
	chunk := []byte(`{"id":"c","model":"up-gpt","choices":[{"delta":{"content":"hi"}}]}`)
	if n := testing.AllocsPerRun(100, func() { l.Event("", chunk, "up-gpt", "bench-gpt") }); n != 0 {
		t.Fatalf("%v allocations per lent chunk", n)
	}
}

// A stream's chunks take a small first block, then full ones: a short answer of 23 chat
// chunks (5 KiB) takes 6 KiB in two blocks, and a stream waiting after its first chunks
// holds 2 KiB.
func TestChunksStartWithASmallBlock(t *testing.T) {
	t.Parallel()
	var c Chunks
	chunk := []byte(`{"id":"chatcmpl-sim","object":"chat.completion.chunk","created":1,"model":"sim-gpt","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	blocks := map[*byte]int{}
	for range 23 {
		out := c.PublicModel(chunk, "sim-gpt", "bench-gpt")
		if len(c.block) == len(out) { // out opened a block
			blocks[&c.block[:1][0]] = cap(c.block)
		}
		if n := len(blocks); n == 1 && cap(c.block) != 2<<10 {
			t.Fatalf("first block of %d bytes, want 2 KiB", cap(c.block))
		}
	}
	total := 0
	for _, size := range blocks {
		total += size
	}
	if len(blocks) != 2 || total != 6<<10 {
		t.Fatalf("%d blocks of %d bytes in all, want 2 of 6 KiB", len(blocks), total)
	}
}
