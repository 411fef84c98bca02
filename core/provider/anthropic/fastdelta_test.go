package anthropic

import (
	"encoding/json"
	"testing"

	mw "modelgateway/core/wire/messageswire"
)

// general is what the reflection decoder reads from a delta event.
func general(data []byte) (int, mw.Delta, bool) {
	var se mw.StreamEvent
	if json.Unmarshal(data, &se) != nil || se.Delta == nil {
		return 0, mw.Delta{}, false
	}
	return se.Index, *se.Delta, true
}

func TestReadDeltaAgreesWithTheGeneralDecoder(t *testing.T) {
	t.Parallel()
	fast := []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_delta","index":12,"delta":{"type":"text_delta","text":"a\n\"b\" \u00e9 😀"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Par"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me see"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}}`,
	}
	var buf []byte
	for _, data := range fast {
		i, typ, text, ok := readDelta([]byte(data), &buf)
		d := deltaOf(typ, string(text))
		gi, gd, gok := general([]byte(data))
		if !ok || !gok || i != gi || d != gd {
			t.Errorf("%s:\n fast %d %+v %v\n general %d %+v %v", data, i, d, ok, gi, gd, gok)
		}
	}
	// Anything else is left to the general decoder, which reads the valid layouts and refuses the rest.
	for _, data := range []string{
		`{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}`,
		`{"index":0,"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"text":"Hi","type":"text_delta"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi","extra":1}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","partial_json":"x"}}`,
		`{"type":"content_block_delta","index":01,"delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"Hi"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}} `,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut`,
	} {
		if i, typ, text, ok := readDelta([]byte(data), &buf); ok {
			t.Errorf("%s: read in place as %d %s %q; want the general decoder", data, i, typ, text)
		}
	}
}

func FuzzReadDelta(f *testing.F) {
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var buf []byte
		i, typ, text, ok := readDelta(data, &buf)
		if !ok {
			return
		}
		d := deltaOf(typ, string(text))
		gi, gd, gok := general(data)
		if !gok || i != gi || d != gd {
			t.Fatalf("%q: fast %d %+v, general %d %+v %v", data, i, d, gi, gd, gok)
		}
	})
}

func TestReadBlockStop(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]int{
		`{"type":"content_block_stop","index":0}`:  0,
		`{"type":"content_block_stop","index":17}`: 17,
	} {
		if i, ok := readBlockStop([]byte(data)); !ok || i != want {
			t.Errorf("%s: %d %v", data, i, ok)
		}
	}
	for _, data := range []string{
		`{"type":"content_block_stop","index":0,"extra":1}`, `{"type":"content_block_stop", "index":0}`,
		`{"type":"content_block_stop","index":}`, `{"index":0,"type":"content_block_stop"}`,
	} {
		if i, ok := readBlockStop([]byte(data)); ok {
			t.Errorf("%s: read in place as %d", data, i)
		}
	}
}

// A text delta as the API writes it, read in place: nearly every event of a stream.
func BenchmarkReadDelta(b *testing.B) {
	data := []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word17"}}`)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok := readDelta(data, &buf); !ok {
			b.Fatal("not read")
		}
	}
}
