package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	mw "modelgateway/core/wire/messageswire"
)

var fastEventSeeds = []string{
	`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`,
	`{"type":"message_start","message":{"id":"msg_\u00e9","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1,"service_tier":"standard","cache_creation":{"ephemeral_5m_input_tokens":0}},"container":null}}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":20}}`,
	`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"\n\nHuman:"},"usage":{"output_tokens":7,"output_tokens_details":{"thinking_tokens":4}}}`,
	` {"type" : "message_delta", "usage" : null, "delta" : null} `,
	`{"\u0074ype":"message_delta","usage":{"output_tokens":2}}`, // an escaped key, decoded as encoding/json does
	// The simulator's and the API's current layouts (compactevent.go reads them).
	`{"type":"message_start","message":{"id":"msg_sim1","type":"message","role":"assistant","model":"up-claude","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`,
	`{"type":"message_start","message":{"model":"claude-sonnet-4-5","id":"msg_01é","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":2,"service_tier":"standard"},"container":null}}`,
	`{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":-0,"output_tokens":20,"server_tool_use":null}}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7,"output_tokens_details":{"thinking_tokens":4}}}`,
	`{"type":"message_start","message":{"id":"m","content":null,"usage":null},"usage":{"output_tokens":3}}`,
	`{"type":"message_delta","delta":null,"usage":{}}`,
}

// compactSeeds are the seeds readCompactEvent reads itself (the others have whitespace or
// escapes).
var compactSeeds = map[int]bool{0: true, 2: true, 6: true, 7: true, 8: true, 9: true, 10: true, 11: true}

// general decodes as the decoder's general path does.
func generalEvent(data []byte) (mw.StreamEvent, bool) {
	var se mw.StreamEvent
	err := json.Unmarshal(data, &se)
	return se, err == nil
}

func TestReadStreamEventAgreesWithEncodingJSON(t *testing.T) {
	t.Parallel()
	for i, data := range fastEventSeeds {
		if compact, ok := readCompactEvent([]byte(data)); ok != compactSeeds[i] {
			t.Errorf("%s: read by readCompactEvent %v, want %v", data, ok, compactSeeds[i])
		} else if want, _ := generalEvent([]byte(data)); ok {
			if diff := cmp.Diff(want, compact); diff != "" {
				t.Errorf("%s: (-general +compact)\n%s", data, diff)
			}
		}
		fast, ok := readStreamEvent([]byte(data))
		want, gok := generalEvent([]byte(data))
		if !ok || !gok {
			t.Errorf("%s: fast %v, general %v", data, ok, gok)
			continue
		}
		if diff := cmp.Diff(want, fast); diff != "" {
			t.Errorf("%s: (-general +fast)\n%s", data, diff)
		}
	}
	// What encoding/json might read otherwise, or refuses, is left to it.
	for _, data := range []string{
		`{"type":"message_delta","Delta":{"stop_reason":"end_turn"}}`,                        // a key in another case
		`{"type":"message_delta","usage":{"output_tokens":1},"usage":{"output_tokens":2}}`,   // a key twice
		`{"type":"message_delta","usage":{"output_tokens":1.0}}`,                             // not an int64
		`{"type":"message_delta","usage":{"output_tokens":"1"}}`,                             // a string
		`{"type":"message_start","message":{"content":[{"type":"text","text":"hi"}]}}`,       // content blocks
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`, // not these events
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}`,                         // cut
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}x`,                       // trailing bytes
		`{"type":"message_delta","usage":{"output_tokens":01}}`,                              // a leading zero
		"{\"type\":\"message_delta\",\"x\x01\":1}",                                           // a control character in a key
		`{"type":"message_delta","extra":[1,}`,                                               // a skipped value that is not JSON
		`{"type":"message_delta","extra":{"a":tru}}`,                                         // the same, deeper
	} {
		if se, ok := readStreamEvent([]byte(data)); ok {
			t.Errorf("%s: read here as %+v; want the general decoder", data, se)
		}
		if se, ok := readCompactEvent([]byte(data)); ok {
			t.Errorf("%s: read by readCompactEvent as %+v; want the general decoder", data, se)
		}
	}
	// What the compact reader leaves to the tokenizer, which reads it the same way: whitespace,
	// escapes, a key it would have to fold, an unknown key's deeper value.
	for _, data := range []string{
		`{"type":"message_delta", "usage":{"output_tokens":1}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":"\n"}}`,
		`{"type":"message_delta","usage":{"output_tokens":1,"x":{"y":{}}}}`,
		`{"type":"message_delta","usage":{"output_tokens":1,"Z":1}}`,
		`{"type":"message_delta","usage":{"output_tokens":1,"x":[1]}}`,
		`{"type":"message_delta","usage":{"output_tokens":1000000000000000000}}`,
		`{"type":"message_start","message":{"id":"a"},"usage":{"input_tokens":1,"output_tokens":1,"cache_creation_input_tokens":1,"cache_read_input_tokens":1},"message":null}`,
	} {
		if se, ok := readCompactEvent([]byte(data)); ok {
			t.Errorf("%s: read by readCompactEvent as %+v; want the tokenizer", data, se)
		}
		want, _ := generalEvent([]byte(data))
		if fast, ok := readStreamEvent([]byte(data)); ok {
			if diff := cmp.Diff(want, fast); diff != "" {
				t.Errorf("%s: (-general +fast)\n%s", data, diff)
			}
		}
	}
}

func FuzzReadStreamEvent(f *testing.F) {
	for _, s := range fastEventSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if compact, ok := readCompactEvent(data); ok {
			want, gok := generalEvent(data)
			if !gok {
				t.Fatalf("%q: read by readCompactEvent, refused by encoding/json", data)
			}
			if diff := cmp.Diff(want, compact); diff != "" {
				t.Fatalf("%q: (-general +compact)\n%s", data, diff)
			}
		}
		fast, ok := readStreamEvent(data)
		if !ok {
			return
		}
		want, gok := generalEvent(data)
		if !gok {
			t.Fatalf("%q: read here, refused by encoding/json", data)
		}
		if diff := cmp.Diff(want, fast); diff != "" {
			t.Fatalf("%q: (-general +fast)\n%s", data, diff)
		}
	})
}

func TestReadTextBlockStart(t *testing.T) {
	t.Parallel()
	for data, want := range map[string]bool{
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`:    true,
		`{"type":"content_block_start","index":12,"content_block":{"type":"text","text":""}}`:   true,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}`:  false,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t"}}`: false,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}} `:   false,
		`{"type":"content_block_start","index":01,"content_block":{"type":"text","text":""}}`:   false,
	} {
		if got := readTextBlockStart([]byte(data)); got != want {
			t.Errorf("%s: %v, want %v", data, got, want)
		}
	}
}
