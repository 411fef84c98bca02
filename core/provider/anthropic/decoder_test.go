package anthropic

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
)

// drainDecoder runs one decoder over an in-process body.
func drainDecoder(r io.Reader, passthrough bool) ([]*corev1.GenerateEvent, error) {
	start := &corev1.Start{Model: publicModel}
	var dec provider.Decoder = &streamDecoder{start: start, blockTool: map[int]*toolBlock{}}
	if passthrough {
		dec = &passthroughDecoder{upstream: upstreamModel, public: publicModel}
	}
	s := provider.NewSSEStream(io.NopCloser(r), start, dec)
	defer s.Close()
	return provider.Drain(s)
}

// The decoders on their own, reading the recordings whole and through iotest.OneByteReader:
// framing must not depend on how the bytes arrive.
func TestDecodersIgnoreChunking(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"text_tool.sse", "thinking_tools.sse", "stop_sequence.sse", "cut.sse", "error_mid.sse"} {
		for _, passthrough := range []bool{false, true} {
			rec := readFile(t, file)
			whole, wholeErr := drainDecoder(bytes.NewReader(rec), passthrough)
			bytewise, byteErr := drainDecoder(iotest.OneByteReader(bytes.NewReader(rec)), passthrough)
			if diff := cmp.Diff(whole, bytewise, protocmp.Transform()); diff != "" {
				t.Errorf("%s (passthrough %v): (-whole +one byte)\n%s", file, passthrough, diff)
			}
			if len(whole) < 2 {
				t.Errorf("%s (passthrough %v): only %d events", file, passthrough, len(whole))
			}
			var pe *provider.Error
			wantErr := file == "cut.sse" || file == "error_mid.sse"
			for _, err := range []error{wholeErr, byteErr} {
				if wantErr != (err != nil) || (err != nil && !errors.As(err, &pe)) {
					t.Errorf("%s (passthrough %v): err = %v, want a *provider.Error: %v", file, passthrough, err, wantErr)
				}
			}
		}
	}
}

// A text answer of 20 deltas, shaped like the API's (and the simulator's): the bench's
// translated stream.
func benchStream() []byte {
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\nevent: ping\ndata: {\"type\":\"ping\"}\n\n")
	for i := range 20 {
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" word%d\"}}\n\n", i)
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.Bytes()
}

func BenchmarkStreamDecoder(b *testing.B) {
	rec := benchStream()
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		evs, err := drainDecoder(bytes.NewReader(rec), false)
		if err != nil || len(evs) != 23 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
	}
}

// The compact events' fields live in one room of the decoder, used again by each: the usage
// merged from message_start must not keep pointers into it, or the later message_delta
// events read into the room would change the input and cache counts after the fact. Three
// message_delta events each overwrite only what they carry.
func TestCompactEventsKeepTheirUsage(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-x\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":12,\"cache_creation_input_tokens\":3,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n")
	b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hi\"}}\n\n")
	for _, out := range []int{5, 9, 20} {
		fmt.Fprintf(&b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}\n\n", out)
	}
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	start := &corev1.Start{Model: publicModel}
	dec := &streamDecoder{start: start}
	s := provider.NewSSEStream(io.NopCloser(&b), start, dec)
	defer s.Close()
	if _, err := provider.Drain(s); err != nil {
		t.Fatal(err)
	}
	if dec.compact.msg.ID != "" || dec.compact.usage.OutputTokens == nil {
		t.Fatal("the last event was not read in the room: the room was not exercised")
	}
	u := s.Usage()
	if start.GetId() != "msg_01" || u.Input != 12 || u.CachedInput != 4 || u.CacheWrite != 3 || u.Output != 20 || !u.Reliable {
		t.Fatalf("id %q, usage %+v: want msg_01, 12 in (4 cached, 3 written), 20 out", start.GetId(), u)
	}
}
