package contentgen

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "modelgateway/gen/gateway/core/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Event constructors (the front does not import core/provider).
func evStart(id string, passthrough bool) *corev1.Start {
	return &corev1.Start{Id: id, Model: "gemini-2.5-flash", Created: 1700000000, Passthrough: passthrough, Status: 200, ContentType: "application/json; charset=UTF-8"}
}

func evText(s string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Text{Text: &corev1.TextDelta{Text: s}}}
}

func evReasoning(s, sig string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{Text: s, Signature: sig}}}
}

func evCall(i int32, id, name, sig string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolCall{ToolCall: &corev1.ToolCallStart{Index: i, Id: id, Name: name, Signature: sig}}}
}

func evArgs(i int32, frag string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolArguments{ToolArguments: &corev1.ToolCallDelta{Index: i, Arguments: frag}}}
}

func evFinish(r corev1.FinishReason) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Finish{Finish: &corev1.Finish{Reason: r}}}
}

func evUsage(in, cached, out, reasoning int64) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Usage{Usage: &corev1.Usage{
		InputTokens: in, CachedInputTokens: cached, OutputTokens: out, ReasoningTokens: reasoning, Reliable: true,
	}}}
}

func evNative(data string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: &corev1.Native{Data: []byte(data)}}}
}

// textAnswer is a short answer with thoughts, as most translated streams look.
var textAnswer = []*corev1.GenerateEvent{
	evReasoning("Greeting ", ""), evReasoning("back.", ""), evReasoning("", "c2ln"),
	evText("Hel"), evText("lo!"),
	evFinish(corev1.FinishReason_FINISH_REASON_STOP), evUsage(5, 3, 12, 8),
}

// toolAnswer has text, then two calls whose arguments arrive in fragments, as a chat upstream
// streams them.
var toolAnswer = []*corev1.GenerateEvent{
	evText("Checking."),
	evCall(0, "call_a", "get_weather", "c2ln"), evArgs(0, `{"city":`), evArgs(0, ` "Oslo"}`),
	evCall(1, "call_b", "get_time", ""), evArgs(1, ""),
	evFinish(corev1.FinishReason_FINISH_REASON_TOOL_CALLS), evUsage(40, 0, 20, 0),
}

type encodeCase struct {
	name    string
	path    string
	headers map[string]string
	start   *corev1.Start
	events  []*corev1.GenerateEvent
	fail    *corev1.StreamError // Fail instead of Finish
}

const (
	sseURL    = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	arrayURL  = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	singleURL = "/v1beta/models/gemini-2.5-flash:generateContent"
	sdkHeader = "google-genai-sdk/1.30.0 gl-node/v22.1.0"
)

var encodeCases = []encodeCase{
	{name: "sse_done_marker_for_other_clients", path: sseURL, start: evStart("r1", false), events: textAnswer},
	{name: "sse_no_done_marker_for_the_sdk", path: sseURL, headers: map[string]string{"X-Goog-Api-Client": sdkHeader}, start: evStart("r1", false), events: textAnswer},
	{name: "array_without_alt", path: arrayURL, start: evStart("r1", false), events: textAnswer},
	{name: "single_response", path: singleURL, start: evStart("r1", false), events: textAnswer},
	{name: "sse_tool_calls", path: sseURL, start: evStart("r2", false), events: toolAnswer},
	{name: "array_tool_calls", path: arrayURL, start: evStart("r2", false), events: toolAnswer},
	{name: "single_tool_calls", path: singleURL, start: evStart("r2", false), events: toolAnswer},
	{
		name: "sse_tool_call_then_text_flushes_the_call", path: sseURL, start: evStart("r3", false),
		events: []*corev1.GenerateEvent{evCall(0, "", "f", ""), evArgs(0, `not json`), evText("after"), evFinish(corev1.FinishReason_FINISH_REASON_LENGTH)},
	},
	{
		name: "sse_fail", path: sseURL, start: evStart("r4", false),
		events: []*corev1.GenerateEvent{evText("Hel")},
		fail:   &corev1.StreamError{Code: "upstream_error", Message: "the upstream connection failed mid-answer"},
	},
	{
		name: "array_fail", path: arrayURL, start: evStart("r4", false),
		events: []*corev1.GenerateEvent{evText("Hel")},
		fail:   &corev1.StreamError{Code: "upstream_timeout", Message: "the upstream stream stalled"},
	},
	{
		name: "passthrough_sse", path: sseURL, start: evStart("", true),
		events: []*corev1.GenerateEvent{
			evNative(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"u1"}`),
			evNative("{\n  \"candidates\": [{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"lo\"}]},\"finishReason\":\"STOP\",\"index\":0}],\n  \"responseId\": \"u1\"\n}"),
			evUsage(5, 0, 3, 0),
		},
	},
	{
		name: "passthrough_array", path: arrayURL, start: evStart("", true),
		events: []*corev1.GenerateEvent{
			evNative(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}]}`),
			evNative(`{"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP","index":0}]}`),
			evUsage(5, 0, 3, 0),
		},
	},
	{
		name: "passthrough_single", path: singleURL, start: evStart("", true),
		events: []*corev1.GenerateEvent{
			evNative(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP","index":0}],"unknownField":1}`),
			evUsage(5, 0, 3, 0),
		},
	},
}

// run drives an encoder the way relay.Handler does and returns what the client received.
func (tc encodeCase) run(t *testing.T) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("POST", tc.path, strings.NewReader(`{"contents":[{"parts":[{"text":"Hi"}]}]}`))
	for k, v := range tc.headers {
		r.Header.Set(k, v)
	}
	req, apiErr := Protocol{}.Decode(r, []byte(`{"contents":[{"parts":[{"text":"Hi"}]}]}`))
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	w := httptest.NewRecorder()
	enc := Protocol{}.Encoder(w, r, req)
	if err := enc.Start(tc.start); err != nil {
		t.Fatal(err)
	}
	for _, ev := range tc.events {
		if err := enc.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if tc.fail != nil {
		enc.Fail(tc.fail)
	} else if err := enc.Finish(); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestEncoderGoldens(t *testing.T) {
	t.Parallel()
	for _, tc := range encodeCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := tc.run(t)
			got := fmt.Sprintf("HTTP %d\nContent-Type: %s\n\n%s", w.Code, w.Header().Get("Content-Type"), w.Body.String())
			golden := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("output differs from %s (-want +got):\n%s", golden, diff)
			}
			checkShape(t, tc, w.Body.String())
		})
	}
}

// checkShape asserts the framing rules independently of the goldens: SSE has only data lines,
// each one JSON (but the marker); the array form is one JSON array; a single answer one object.
func checkShape(t *testing.T, tc encodeCase, body string) {
	t.Helper()
	switch {
	case strings.Contains(tc.path, "alt=sse"):
		sc := bufio.NewScanner(strings.NewReader(body))
		sc.Buffer(nil, 1<<20)
		var last string
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				continue
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				t.Errorf("line %q is not a data line", line)
				continue
			}
			last = data
			if data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Errorf("data line %q is not JSON", data)
			}
		}
		if !strings.HasSuffix(body, "\n\n") {
			t.Error("the last event is not terminated by a blank line")
		}
		sdk := tc.headers["X-Goog-Api-Client"] != ""
		switch {
		case tc.fail != nil && last == "[DONE]":
			t.Error("a failed stream must end with the error chunk")
		case tc.fail == nil && sdk && last == "[DONE]":
			t.Error("the SDK must not get the [DONE] marker")
		case tc.fail == nil && !sdk && last != "[DONE]":
			t.Error("other clients must get the [DONE] marker")
		}
	case strings.HasSuffix(tc.path, "streamGenerateContent"):
		var arr []json.RawMessage
		if err := json.Unmarshal([]byte(body), &arr); err != nil {
			t.Errorf("the array form is not one JSON array: %v", err)
		}
	default:
		var obj map[string]any
		if err := json.Unmarshal([]byte(body), &obj); err != nil {
			t.Errorf("the single answer is not one JSON object: %v", err)
		}
	}
}
