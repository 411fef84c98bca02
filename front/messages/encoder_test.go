package messages

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/ssestream"
	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Canonical event constructors, short for the tables.
func evText(s string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Text{Text: &corev1.TextDelta{Text: s}}}
}
func evThink(text, sig string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{Text: text, Signature: sig}}}
}
func evTool(i int32, id, name string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolCall{ToolCall: &corev1.ToolCallStart{Index: i, Id: id, Name: name}}}
}
func evArgs(i int32, frag string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolArguments{ToolArguments: &corev1.ToolCallDelta{Index: i, Arguments: frag}}}
}
func evFinish(r corev1.FinishReason, seq string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Finish{Finish: &corev1.Finish{Reason: r, StopSequence: seq}}}
}
func evUsage(in, cached, write, out int64) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Usage{Usage: &corev1.Usage{
		InputTokens: in, CachedInputTokens: cached, CacheWriteTokens: write, OutputTokens: out, Reliable: true,
	}}}
}
func evNative(name, data string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: &corev1.Native{Event: name, Data: []byte(data)}}}
}

var translatedStart = &corev1.Start{Id: "chatcmpl-abc", Model: "claude-public", Created: 1700000000}

// encoderCase is one golden transcript. fail, when set, ends the stream with Fail.
type encoderCase struct {
	name   string
	start  *corev1.Start
	events []*corev1.GenerateEvent
	fail   *corev1.StreamError
	// What the official SDK's accumulator must make of the stream (translated cases).
	wantContent []map[string]any
	wantStop    string
	wantUsage   [4]int64 // input, output, cache read, cache write
}

var (
	stop     = corev1.FinishReason_FINISH_REASON_STOP
	toolStop = corev1.FinishReason_FINISH_REASON_TOOL_CALLS
)

var encoderCases = []encoderCase{
	{
		name:  "text",
		start: translatedStart,
		events: []*corev1.GenerateEvent{
			evText("Hel"), evText(""), evText("lo <b>&</b>"), evFinish(stop, ""), evUsage(10, 5, 2, 3),
		},
		wantContent: []map[string]any{{"type": "text", "text": "Hello <b>&</b>"}},
		wantStop:    "end_turn", wantUsage: [4]int64{10, 3, 5, 2},
	},
	{
		name:  "text_tool_use",
		start: translatedStart,
		events: []*corev1.GenerateEvent{
			evText("Checking."), evTool(0, "call_1", "get_weather"), evArgs(0, `{"city":`), evArgs(0, `"Oslo"}`),
			evFinish(toolStop, ""), evUsage(412, 0, 0, 61),
		},
		wantContent: []map[string]any{
			{"type": "text", "text": "Checking."},
			{"type": "tool_use", "id": "toolu_call_1", "name": "get_weather", "input": map[string]any{"city": "Oslo"}},
		},
		wantStop: "tool_use", wantUsage: [4]int64{412, 61, 0, 0},
	},
	{
		name:  "thinking_signature_tool",
		start: &corev1.Start{Id: "msg_upstream", Model: "claude-public"},
		events: []*corev1.GenerateEvent{
			evThink("Let me", ""), evThink(" think.", ""), evThink("", "c2lnbmF0dXJl"),
			evTool(0, "toolu_9", "lookup"), evArgs(0, `{}`), evFinish(toolStop, ""), evUsage(20, 100, 0, 40),
		},
		wantContent: []map[string]any{
			{"type": "thinking", "thinking": "Let me think.", "signature": "c2lnbmF0dXJl"},
			{"type": "tool_use", "id": "toolu_9", "name": "lookup", "input": map[string]any{}},
		},
		wantStop: "tool_use", wantUsage: [4]int64{20, 40, 100, 0},
	},
	{
		// The second call starts while the first one's arguments are incomplete: it is buffered
		// and started, with everything buffered, once the first call's arguments are whole.
		name:  "interleaved_parallel_tools",
		start: translatedStart,
		events: []*corev1.GenerateEvent{
			evTool(0, "call_a", "get_weather"), evArgs(0, `{"ci`),
			evTool(1, "call_b", "get_time"), evArgs(1, `{"tz":`),
			evArgs(0, `ty":"Oslo"}`), evArgs(1, `"CET"}`),
			evTool(2, "call_c", "no_args"),
			evFinish(toolStop, ""), evUsage(7, 0, 0, 9),
		},
		wantContent: []map[string]any{
			{"type": "tool_use", "id": "toolu_call_a", "name": "get_weather", "input": map[string]any{"city": "Oslo"}},
			{"type": "tool_use", "id": "toolu_call_b", "name": "get_time", "input": map[string]any{"tz": "CET"}},
			{"type": "tool_use", "id": "toolu_call_c", "name": "no_args", "input": map[string]any{}},
		},
		wantStop: "tool_use", wantUsage: [4]int64{7, 9, 0, 0},
	},
	{
		// Calls that arrive one after the other (as OpenAI sends them) stream live: the first
		// one's arguments are whole when the second starts. A stop finish with tool calls is
		// tool_use, or agents would not run them.
		name:  "sequential_parallel_tools",
		start: translatedStart,
		events: []*corev1.GenerateEvent{
			evTool(0, "call_a", "f"), evArgs(0, `{"a":1}`),
			evTool(1, "call_b", "g"), evArgs(1, `{"b":`), evArgs(1, `2}`),
			evFinish(stop, ""), evUsage(1, 0, 0, 2),
		},
		wantContent: []map[string]any{
			{"type": "tool_use", "id": "toolu_call_a", "name": "f", "input": map[string]any{"a": float64(1)}},
			{"type": "tool_use", "id": "toolu_call_b", "name": "g", "input": map[string]any{"b": float64(2)}},
		},
		wantStop: "tool_use", wantUsage: [4]int64{1, 2, 0, 0},
	},
	{
		// Redacted thinking is a whole block; text after a tool call closes the call's block.
		name:  "redacted_text_after_tool_length",
		start: translatedStart,
		events: []*corev1.GenerateEvent{
			{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{RedactedData: "b3BhcXVl"}}},
			evText("Before."), evTool(0, "call_1", "f"), evArgs(0, `{"k":"v"}`), evText("After."),
			evFinish(corev1.FinishReason_FINISH_REASON_LENGTH, ""), evUsage(4, 0, 0, 100),
		},
		wantContent: []map[string]any{
			{"type": "redacted_thinking", "data": "b3BhcXVl"},
			{"type": "text", "text": "Before."},
			{"type": "tool_use", "id": "toolu_call_1", "name": "f", "input": map[string]any{"k": "v"}},
			{"type": "text", "text": "After."},
		},
		wantStop: "max_tokens", wantUsage: [4]int64{4, 100, 0, 0},
	},
	{
		name:  "stop_sequence",
		start: translatedStart,
		events: []*corev1.GenerateEvent{
			evText("1 2 3"), evFinish(corev1.FinishReason_FINISH_REASON_STOP_SEQUENCE, "END"), evUsage(1, 0, 0, 3),
		},
		wantContent: []map[string]any{{"type": "text", "text": "1 2 3"}},
		wantStop:    "stop_sequence", wantUsage: [4]int64{1, 3, 0, 0},
	},
	{
		name:   "fail",
		start:  translatedStart,
		events: []*corev1.GenerateEvent{evText("partial")},
		fail:   &corev1.StreamError{Code: "upstream_error", Message: "upstream status 529: Overloaded"},
	},
	{
		name:  "passthrough",
		start: &corev1.Start{Model: "claude-public", Passthrough: true, Status: 200, ContentType: "text/event-stream"},
		events: []*corev1.GenerateEvent{
			evNative("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-public","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1,"unknown_field":true}}}`),
			evNative("ping", `{"type":"ping"}`),
			evNative("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			evNative("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`),
			evNative("content_block_stop", `{"type":"content_block_stop","index":0}`),
			evNative("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`),
			evNative("message_stop", `{"type":"message_stop"}`),
			evUsage(3, 0, 0, 2),
		},
		wantContent: []map[string]any{{"type": "text", "text": "Hi"}},
		wantStop:    "end_turn", wantUsage: [4]int64{3, 2, 0, 0},
	},
}

// run drives an encoder the way relay.Handler does.
func run(t *testing.T, c encoderCase, stream bool) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	enc := Protocol{}.Encoder(w, httptest.NewRequest(http.MethodPost, "/v1/messages", nil), &corev1.GenerateRequest{Stream: stream})
	if err := enc.Start(c.start); err != nil {
		t.Fatal(err)
	}
	for _, ev := range c.events {
		if err := enc.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if c.fail != nil {
		enc.Fail(c.fail)
	} else if err := enc.Finish(); err != nil {
		t.Fatal(err)
	}
	return w
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestStreamEncoderGoldens(t *testing.T) {
	t.Parallel()
	for _, c := range encoderCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := run(t, c, true)
			if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q", ct)
			}
			golden(t, c.name+".sse", w.Body.Bytes())
			checkEventNames(t, w.Body.Bytes())
			if c.fail == nil {
				checkWithSDK(t, c, w.Body.Bytes())
			}
		})
	}
}

func TestFailIsTheSDKsAPIError(t *testing.T) {
	t.Parallel()
	c := caseNamed(t, "fail")
	w := run(t, c, true)
	stream := sdkStream(w.Body.Bytes())
	for stream.Next() {
	}
	var apiErr *anthropic.Error
	if !errors.As(stream.Err(), &apiErr) {
		t.Fatalf("err = %v, want an *anthropic.Error", stream.Err())
	}
	if got := apiErr.Type(); got != "overloaded_error" {
		t.Errorf("error type %q, want overloaded_error", got)
	}
}

func TestNonStreamEncoderGoldens(t *testing.T) {
	t.Parallel()
	for _, c := range encoderCases {
		if c.fail != nil || c.start.GetPassthrough() {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := run(t, c, false)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("status %d, content type %q", w.Code, w.Header().Get("Content-Type"))
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, w.Body.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".json", append(pretty.Bytes(), '\n'))

			var msg anthropic.Message
			if err := json.Unmarshal(w.Body.Bytes(), &msg); err != nil {
				t.Fatal(err)
			}
			checkMessage(t, c, &msg)
		})
	}
}

func TestPassthroughBodyIsVerbatim(t *testing.T) {
	t.Parallel()
	body := `{"id":"msg_1","type":"message","model":"claude-public","content":[],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1},"future":{"x":1}}`
	c := encoderCase{
		start:  &corev1.Start{Model: "claude-public", Passthrough: true, Status: 200, ContentType: "application/json"},
		events: []*corev1.GenerateEvent{evNative("", body), evUsage(1, 0, 0, 1)},
	}
	w := run(t, c, false)
	if w.Body.String() != body || w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("status %d, type %q, body %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}

// checkEventNames: every event has an event: line and its data's type equals it, or the Go SDK
// sees nothing (anthropic-messages.md "Streaming").
func checkEventNames(t *testing.T, out []byte) {
	t.Helper()
	for _, ev := range bytes.Split(bytes.TrimSpace(out), []byte("\n\n")) {
		lines := bytes.SplitN(ev, []byte("\n"), 2)
		name, ok := bytes.CutPrefix(lines[0], []byte("event: "))
		if !ok || len(lines) != 2 {
			t.Fatalf("event without a name line: %q", ev)
		}
		data, _ := bytes.CutPrefix(lines[1], []byte("data: "))
		var typed struct{ Type string }
		if err := json.Unmarshal(data, &typed); err != nil || typed.Type != string(name) {
			t.Errorf("event %q carries type %q (%v)", name, typed.Type, err)
		}
	}
}

func sdkStream(out []byte) *ssestream.Stream[anthropic.MessageStreamEventUnion] {
	return sdkStreamFrom(bytes.NewReader(out))
}

func sdkStreamFrom(body io.Reader) *ssestream.Stream[anthropic.MessageStreamEventUnion] {
	resp := &http.Response{
		StatusCode: 200,
		Header:     http.Header{"Content-Type": []string{"text/event-stream"}},
		Body:       io.NopCloser(body),
		// With the request the SDK builds a typed *anthropic.Error from an error event.
		Request: httptest.NewRequest(http.MethodPost, "/v1/messages", nil),
	}
	return ssestream.NewStream[anthropic.MessageStreamEventUnion](ssestream.NewDecoder(resp), nil)
}

// checkWithSDK feeds the stream to the official Go SDK's decoder and accumulator, which
// enforce contiguous block indices and matching delta types.
func checkWithSDK(t *testing.T, c encoderCase, out []byte) {
	t.Helper()
	for _, body := range []io.Reader{bytes.NewReader(out), iotest.OneByteReader(bytes.NewReader(out))} {
		checkReaderWithSDK(t, c, body)
	}
}

func checkReaderWithSDK(t *testing.T, c encoderCase, body io.Reader) {
	t.Helper()
	stream := sdkStreamFrom(body)
	var msg anthropic.Message
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	checkMessage(t, c, &msg)
}

func checkMessage(t *testing.T, c encoderCase, msg *anthropic.Message) {
	t.Helper()
	var content []map[string]any
	for _, b := range msg.Content {
		var m map[string]any
		if err := json.Unmarshal([]byte(b.RawJSON()), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "citations")
		content = append(content, m)
	}
	if diff := cmp.Diff(c.wantContent, content); diff != "" {
		t.Errorf("content (-want +got)\n%s", diff)
	}
	if string(msg.StopReason) != c.wantStop {
		t.Errorf("stop_reason %q, want %q", msg.StopReason, c.wantStop)
	}
	u := msg.Usage
	got := [4]int64{u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens}
	if got != c.wantUsage {
		t.Errorf("usage (in, out, read, write) = %v, want %v", got, c.wantUsage)
	}
	if msg.Model != "claude-public" {
		t.Errorf("model %q", msg.Model)
	}
	if len(msg.ID) < 5 || msg.ID[:4] != "msg_" {
		t.Errorf("id %q lacks the msg_ prefix", msg.ID)
	}
}

func caseNamed(t *testing.T, name string) encoderCase {
	t.Helper()
	for _, c := range encoderCases {
		if c.name == name {
			return c
		}
	}
	t.Fatalf("no case %q", name)
	return encoderCase{}
}
