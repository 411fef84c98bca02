package simulator

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Raw-byte checks of each protocol's stream framing, and golden transcripts of whole streams.

const toolsChat = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`
const toolsResponses = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
const toolsAnthropic = `"tools":[{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
const toolsGemini = `"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}},"required":["city"]}}]}]`

var transcripts = []struct {
	golden, path, body string
}{
	{"chat-text.sse", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi #sim:think"}]}`},
	{"chat-tool.sse", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"weather?"}],` + toolsChat + `}`},
	{"completions.sse", "/v1/completions", `{"model":"m","stream":true,"prompt":"Once"}`},
	{"responses-text.sse", "/v1/responses", `{"model":"m","stream":true,"input":"hi #sim:think","include":["reasoning.encrypted_content"]}`},
	{"responses-tool.sse", "/v1/responses", `{"model":"m","stream":true,"input":"weather?",` + toolsResponses + `}`},
	{"messages-text.sse", "/v1/messages", `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi #sim:think #sim:cache=1"}]}`},
	{"messages-tool.sse", "/v1/messages", `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"weather?"}],` + toolsAnthropic + `}`},
	{"gemini-text.sse", "/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi #sim:think"}]}]}`},
	{"gemini-tool.sse", "/v1beta/models/g:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"weather?"}]}],` + toolsGemini + `}`},
	{"gemini-array.json", "/v1beta/models/g:streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
}

func TestGoldenTranscripts(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{Words: 5})
	for _, tc := range transcripts {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			raw := mustPost(t, url, tc.path, tc.body)
			golden(t, tc.golden, raw)
			if strings.HasSuffix(tc.golden, ".sse") {
				events(t, raw) // parses whole and byte by byte
			}
		})
	}
}

func TestChatFraming(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	for _, body := range []string{transcripts[0].body, transcripts[1].body, transcripts[2].body} {
		raw := mustPost(t, url, "/v1/chat/completions", body)
		if bytes.Contains(raw, []byte("event:")) || !bytes.HasSuffix(raw, []byte("data: [DONE]\n\n")) {
			t.Errorf("chat stream must be data-only and end with [DONE]:\n%s", raw)
		}
		for _, ev := range events(t, raw) {
			if string(ev.Data) != "[DONE]" && bytes.Contains(ev.Data, []byte(`"error"`)) {
				t.Errorf("a normal chunk has an error key: %s", ev.Data)
			}
		}
	}
}

func TestAnthropicFraming(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	for _, body := range []string{transcripts[5].body, transcripts[6].body} {
		raw := mustPost(t, url, "/v1/messages", body)
		evs := events(t, raw)
		open, next := -1, 0
		for i, ev := range evs {
			var d struct {
				Type  string `json:"type"`
				Index *int   `json:"index"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			if ev.Name == "" || ev.Name != d.Type {
				t.Fatalf("event %d has event: %q but type %q", i, ev.Name, d.Type)
			}
			switch d.Type {
			case "content_block_start":
				if open != -1 || *d.Index != next {
					t.Fatalf("block %d started while %d open, want index %d", *d.Index, open, next)
				}
				open = *d.Index
				next++
			case "content_block_delta":
				if *d.Index != open {
					t.Fatalf("delta for block %d while %d open", *d.Index, open)
				}
			case "content_block_stop":
				if *d.Index != open {
					t.Fatalf("stop for block %d while %d open", *d.Index, open)
				}
				open = -1
			}
		}
		if evs[0].Name != "message_start" || evs[len(evs)-2].Name != "message_delta" || evs[len(evs)-1].Name != "message_stop" {
			t.Errorf("stream does not run message_start ... message_delta, message_stop")
		}
	}
}

func TestGeminiSSEFraming(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	raw := mustPost(t, url, "/v1beta/models/g:streamGenerateContent?alt=sse", transcripts[7].body)
	if !bytes.HasSuffix(raw, []byte("}\r\n\r\n")) {
		t.Errorf("last event is not terminated by CRLF CRLF")
	}
	for _, line := range strings.Split(string(raw), "\r\n") {
		if line != "" && !strings.HasPrefix(line, "data: {") {
			t.Fatalf("line %q: Gemini streams carry only data lines (no event:, comments or [DONE])", line)
		}
	}
	var array []json.RawMessage
	if err := json.Unmarshal(mustPost(t, url, "/v1beta/models/g:streamGenerateContent", transcripts[9].body), &array); err != nil || len(array) != 12 {
		t.Errorf("JSON-array stream: %d elements, %v", len(array), err)
	}
}

func TestResponsesFraming(t *testing.T) {
	t.Parallel()
	_, url := start(t, Options{})
	for _, body := range []string{transcripts[3].body, transcripts[4].body} {
		evs := events(t, mustPost(t, url, "/v1/responses", body))
		items := 0
		for i, ev := range evs {
			var d struct {
				Type           string              `json:"type"`
				SequenceNumber int                 `json:"sequence_number"`
				OutputIndex    *int                `json:"output_index"`
				ItemID         string              `json:"item_id"`
				Item           struct{ ID string } `json:"item"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			if ev.Name != d.Type || d.SequenceNumber != i {
				t.Fatalf("event %d: event: %q, type %q, sequence_number %d", i, ev.Name, d.Type, d.SequenceNumber)
			}
			if d.Type == "response.output_item.added" {
				if *d.OutputIndex != items || d.Item.ID == "" {
					t.Fatalf("item added at %d with id %q, want index %d", *d.OutputIndex, d.Item.ID, items)
				}
				items++
			}
		}
		if evs[0].Name != "response.created" || evs[len(evs)-1].Name != "response.completed" {
			t.Errorf("first %q last %q", evs[0].Name, evs[len(evs)-1].Name)
		}
		var done struct {
			Response struct{ Output []json.RawMessage } `json:"response"`
		}
		_ = json.Unmarshal(evs[len(evs)-1].Data, &done)
		if len(done.Response.Output) != items {
			t.Errorf("response.completed lists %d items of %d", len(done.Response.Output), items)
		}
	}
}
