package anthropic

import (
	"bytes"
	"fmt"
	"io"
	"testing"
)

// The decoder's cost per chunk: streams that differ only in the number of text deltas, so
// that the difference of two sub-benchmarks is the deltas alone (SSE read, readDelta, the
// text event), without the stream's head and tail (message_start, message_delta).
func BenchmarkDecoderPerChunk(b *testing.B) {
	for _, n := range []int{20, 120} {
		var rec bytes.Buffer
		rec.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n")
		rec.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		for i := range n {
			fmt.Fprintf(&rec, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"w%d \"}}\n\n", i)
		}
		rec.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
		rec.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n")
		rec.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
		data := rec.Bytes()
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			r := bytes.NewReader(nil)
			for b.Loop() {
				r.Reset(data)
				s, err := translatedStream(io.NopCloser(r), publicModel, 1) // as translated makes it
				if err != nil {
					b.Fatal(err)
				}
				events := 0
				for {
					_, err := s.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					events++
				}
				s.Close()
				if events != n+3 {
					b.Fatalf("%d events", events)
				}
			}
		})
	}
}
