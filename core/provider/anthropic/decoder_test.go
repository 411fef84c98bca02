package anthropic

import (
	"bytes"
	"errors"
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
	return provider.Drain(provider.NewSSEStream(io.NopCloser(r), start, dec))
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
