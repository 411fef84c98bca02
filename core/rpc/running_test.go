package rpc

import (
	"testing"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
)

// The output bound of a passthrough chunk counts its content's bytes and nothing of its
// envelope, in each protocol; events that repeat content or carry none count nothing. A
// bound below the content (a missed member) would let an answer outrun its hold; one that
// counts the envelope would cut answers the balance could pay for.
func TestNativeContentBoundsTheOutput(t *testing.T) {
	cases := []struct {
		name, event, data string
		want              int64
	}{
		{"chat text", "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" alpha"},"finish_reason":null}]}`, 6},
		{"chat role only", "", `{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`, 0},
		{"chat escapes counted raw", "", `{"choices":[{"delta":{"content":"a\"b\u00e9"}}]}`, 10},
		{"chat tool call", "", `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"ci"}}]}}]}`, 3 + 5},
		{"chat reasoning", "", `{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, 3},
		{"chat usage chunk", "", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}`, 0},
		{"messages text", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" bravo"}}`, 6},
		{"messages json", "content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`, 7},
		{"messages thinking", "content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"why"}}`, 3},
		{"messages tool start", "content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"get","input":{}}}`, 3 + 2},
		{"messages start", "message_start", `{"type":"message_start","message":{"id":"m","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":3}}}`, 0},
		{"messages delta", "message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":12}}`, 0},
		{"responses text", "response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":" charlie"}`, 8},
		{"responses args", "response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{\"x"}`, 4},
		{"responses done repeats", "response.output_text.done", `{"type":"response.output_text.done","text":"alpha bravo"}`, 0},
		{"responses completed", "response.completed", `{"type":"response.completed","response":{"output":[{"content":[{"text":"alpha"}]}]}}`, 0},
		{"gemini text", "", `{"candidates":[{"content":{"parts":[{"text":"delta"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":4},"modelVersion":"m"}`, 5},
		{"gemini function call", "", `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get","args":{"city":"Paris"}}}]}}]}`, 3 + 16},
		{"unclosed", "", `{"choices":[{"delta":{"content":"abc`, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := nativeContent(c.event, []byte(c.data)); got != c.want {
				t.Fatalf("content bytes %d, want %d", got, c.want)
			}
		})
	}
}

// Translated events count their content's bytes: text, reasoning (its signature stands for
// reasoning charged as output), tool names and argument fragments.
func TestOutputBoundOfTranslatedEvents(t *testing.T) {
	cases := []struct {
		ev   *corev1.GenerateEvent
		want int64
	}{
		{&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Text{Text: &corev1.TextDelta{Text: "héllo"}}}, 6},
		{&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{Text: "ab", Signature: "sig"}}}, 5},
		{&corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolCall{ToolCall: &corev1.ToolCallStart{Id: "call_1", Name: "get"}}}, 3},
		{&corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolArguments{ToolArguments: &corev1.ToolCallDelta{Arguments: `{"a":1}`}}}, 7},
		{&corev1.GenerateEvent{Event: &corev1.GenerateEvent_Finish{Finish: &corev1.Finish{}}}, 0},
	}
	for i, c := range cases {
		if got := outputBound(c.ev); got != c.want {
			t.Errorf("case %d: %d, want %d", i, got, c.want)
		}
	}
}

// Media parts add a fixed bound each to a hold's input estimate, in every protocol's
// spelling, counted once each.
func TestMediaPartsInEveryProtocol(t *testing.T) {
	cases := []struct {
		name          string
		body          string
		images, files int64
	}{
		{"chat image url", `{"messages":[{"role":"user","content":[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]}`, 1, 0},
		{"chat file", `{"messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"JVBER","filename":"a.pdf"}}]}]}`, 0, 1},
		{"chat audio", `{"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`, 0, 0},
		{"responses", `{"input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x"},{"type":"input_file","file_id":"f1"}]}]}`, 1, 1},
		{"messages", `{"messages":[{"role":"user","content":[{"type":"image","source":{"type":"url","url":"https://x"}},{"type":"document","source":{"type":"file","file_id":"f"}}]}]}`, 1, 1},
		{"gemini", `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"iVBO"}},{"file_data":{"mime_type":"video/mp4","file_uri":"gs://v"}}]}]}`, 1, 1},
		{"text that names them", `{"messages":[{"role":"user","content":"\"type\":\"image\" and \"inlineData\":{}"}]}`, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if i, f := mediaParts([]byte(c.body)); i != c.images || f != c.files {
				t.Fatalf("images %d, files %d; want %d, %d", i, f, c.images, c.files)
			}
		})
	}
}

// BenchmarkNativeContent is the per-chunk cost of bounding a passthrough chunk's output.
func BenchmarkNativeContent(b *testing.B) {
	data := []byte(`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":" alpha"},"logprobs":null,"finish_reason":null}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if nativeContent("", data) != 6 {
			b.Fatal("wrong count")
		}
	}
}

// BenchmarkRunningPass is the meter's cost per streamed event where the hold covers it
// (nearly every event): a passthrough chat chunk and a translated text delta.
func BenchmarkRunningPass(b *testing.B) {
	chunk := provider.NativeEvent("", []byte(`{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz","object":"chat.completion.chunk","created":1732700000,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_0123456789","choices":[{"index":0,"delta":{"content":" alpha"},"logprobs":null,"finish_reason":null}]}`))
	text := provider.TextEvent(" alpha")
	for _, c := range []struct {
		name string
		ev   *corev1.GenerateEvent
	}{{"native", chunk}, {"text", text}} {
		b.Run(c.name, func(b *testing.B) {
			r := &running{native: true, coverOut: 1 << 62}
			b.ReportAllocs()
			for b.Loop() {
				if r.pass(c.ev) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
