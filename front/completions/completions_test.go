package completions

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func ptr[T any](v T) *T { return &v }

func prompt(s string) []*corev1.Message {
	return []*corev1.Message{{Role: corev1.Role_ROLE_USER, Parts: []*corev1.Part{{Kind: &corev1.Part_Text{Text: s}}}}}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       *corev1.GenerateRequest
	}{
		{"the minimal body of spec 4.2", `{"model":"gpt-3.5-turbo-instruct","prompt":"Say hi","max_tokens":16}`,
			&corev1.GenerateRequest{EndpointFamily: "completions", Protocol: corev1.Protocol_PROTOCOL_COMPLETIONS, Model: "gpt-3.5-turbo-instruct",
				MaxOutputTokens: ptr(int64(16)), Messages: prompt("Say hi"), Parameters: []string{"max_tokens"}}},
		{"stream:false is accepted; unknown and untranslated fields are tolerated",
			`{"model":"m","prompt":"","stream":false,"echo":true,"best_of":2,"suffix":"!","stream_options":null}`,
			&corev1.GenerateRequest{EndpointFamily: "completions", Protocol: corev1.Protocol_PROTOCOL_COMPLETIONS, Model: "m", Messages: prompt("")}},
		{"every parameter, in the spec's order; logprobs n asks for n alternatives",
			`{"model":"m","prompt":"p","user":"u","logit_bias":{"1":2},"logprobs":3,"n":2,"seed":1,"stop":"\n","presence_penalty":1,` +
				`"frequency_penalty":0.5,"max_tokens":5,"top_p":0.5,"temperature":0}`,
			&corev1.GenerateRequest{EndpointFamily: "completions", Protocol: corev1.Protocol_PROTOCOL_COMPLETIONS, Model: "m", Messages: prompt("p"),
				Temperature: ptr(0.0), TopP: ptr(0.5), MaxOutputTokens: ptr(int64(5)), FrequencyPenalty: ptr(0.5), PresencePenalty: ptr(1.0),
				Stop: []string{"\n"}, Seed: ptr(int64(1)), N: ptr(int32(2)), Logprobs: true, TopLogprobs: ptr(int32(3)), User: "u",
				Parameters: []string{"temperature", "top_p", "max_tokens", "frequency_penalty", "presence_penalty", "stop", "seed", "n", "logprobs", "logit_bias", "user"}}},
		{"logprobs 0 asks for the chosen tokens only", `{"model":"m","prompt":"p","logprobs":0}`,
			&corev1.GenerateRequest{EndpointFamily: "completions", Protocol: corev1.Protocol_PROTOCOL_COMPLETIONS, Model: "m", Messages: prompt("p"),
				Logprobs: true, Parameters: []string{"logprobs"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Protocol{}.Decode(httptest.NewRequest(http.MethodPost, "/v1/completions", nil), []byte(tc.body))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, code, message string
	}{
		{"a body that is not JSON", `{"model"`, apierror.InvalidRequest, "not a valid completions request"},
		{"no model", `{"prompt":"p"}`, apierror.InvalidRequest, "model is required"},
		{"no prompt", `{"model":"m"}`, apierror.InvalidRequest, "prompt is required"},
		{"a null prompt", `{"model":"m","prompt":null}`, apierror.InvalidRequest, "prompt is required"},
		{"a batch of string prompts (spec 4.2 rule 3)", `{"model":"m","prompt":["a","b"]}`, apierror.UnsupportedPromptShape, "must be a string"},
		{"a one-element batch", `{"model":"m","prompt":["a"]}`, apierror.UnsupportedPromptShape, "must be a string"},
		{"a token-id prompt", `{"model":"m","prompt":[1,2,3]}`, apierror.UnsupportedPromptShape, "must be a string"},
		{"a batch of token-id prompts", `{"model":"m","prompt":[[1],[2]]}`, apierror.UnsupportedPromptShape, "must be a string"},
		{"a number prompt", `{"model":"m","prompt":42}`, apierror.UnsupportedPromptShape, "must be a string"},
		{"streaming (spec 4.2: the route does not stream)", `{"model":"m","prompt":"p","stream":true}`, apierror.StreamingNotSupported, "does not stream"},
		{"a negative max_tokens", `{"model":"m","prompt":"p","max_tokens":-1}`, apierror.InvalidRequest, "max_tokens must not be negative"},
		{"a boolean logprobs (that is chat's spelling)", `{"model":"m","prompt":"p","logprobs":true}`, apierror.InvalidRequest, "not a valid"},
		{"stream that is a string", `{"model":"m","prompt":"p","stream":"true"}`, apierror.InvalidRequest, "not a valid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Protocol{}.Decode(httptest.NewRequest(http.MethodPost, "/v1/completions", nil), []byte(tc.body))
			if err == nil {
				t.Fatalf("Decode accepted it: %v", got)
			}
			if err.Code != tc.code || !strings.Contains(err.Message, tc.message) {
				t.Errorf("error %s: %q, want %s containing %q", err.Code, err.Message, tc.code, tc.message)
			}
		})
	}
}

func usageEvent(in, cached, out int64) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Usage{Usage: &corev1.Usage{InputTokens: in, CachedInputTokens: cached, OutputTokens: out, Reliable: true}}}
}

type sdkView struct {
	ID, Model, Text, Finish string
	Prompt, Completion      int64
}

var encCases = []struct {
	name   string
	events []*corev1.GenerateEvent
	sdk    sdkView
}{
	{"translated", []*corev1.GenerateEvent{
		startEv(&corev1.Start{Id: "msg_1", Model: "team/instruct", Created: 1730000000}),
		reasoningEv("dropped", ""), textEv("Once"), textEv(" upon <a> time"),
		finishEv(corev1.FinishReason_FINISH_REASON_LENGTH), usageEvent(3, 1, 4),
	}, sdkView{ID: "cmpl-msg_1", Model: "team/instruct", Text: "Once upon <a> time", Finish: "length", Prompt: 4, Completion: 4}},
	{"translated_tool_call_reads_as_stop", []*corev1.GenerateEvent{
		startEv(&corev1.Start{Id: "cmpl-2", Model: "team/instruct", Created: 1730000000}),
		toolCallEv(0, "c", "f"), toolArgsEv(0, "{}"),
		finishEv(corev1.FinishReason_FINISH_REASON_TOOL_CALLS), usageEvent(1, 0, 1),
	}, sdkView{ID: "cmpl-2", Model: "team/instruct", Finish: "stop", Prompt: 1, Completion: 1}},
	{"translated_content_filter", []*corev1.GenerateEvent{
		startEv(&corev1.Start{Id: "cmpl-3", Model: "team/instruct", Created: 1730000000}),
		finishEv(corev1.FinishReason_FINISH_REASON_CONTENT_FILTER), usageEvent(1, 0, 0),
	}, sdkView{ID: "cmpl-3", Model: "team/instruct", Finish: "content_filter", Prompt: 1}},
	{"passthrough", []*corev1.GenerateEvent{
		startEv(&corev1.Start{Model: "team/instruct", Passthrough: true, Status: 200, ContentType: "application/json"}),
		nativeEv(`{"id":"cmpl-10","object":"text_completion","created":1730000008,"model":"team/instruct","choices":[{"text":"\n\nHello","index":0,"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`),
		textEv("ignored"), usageEvent(3, 0, 2),
	}, sdkView{ID: "cmpl-10", Model: "team/instruct", Text: "\n\nHello", Finish: "stop", Prompt: 3, Completion: 2}},
}

func run(t *testing.T, events []*corev1.GenerateEvent) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	enc := Protocol{}.Encoder(rec, r, &corev1.GenerateRequest{})
	if err := enc.Start(events[0].GetStart()); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events[1:] {
		if err := enc.Event(ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Finish(); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestEncoder(t *testing.T) {
	t.Parallel()
	for _, tc := range encCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := run(t, tc.events)
			got := fmt.Sprintf("status: %d\ncontent-type: %s\n\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
			path := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if want, err := os.ReadFile(path); err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			} else if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// The SDK's Completion type must read it.
			var c openai.Completion
			if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
				t.Fatal(err)
			}
			v := sdkView{ID: c.ID, Model: c.Model, Prompt: c.Usage.PromptTokens, Completion: c.Usage.CompletionTokens}
			if len(c.Choices) == 1 {
				v.Text, v.Finish = c.Choices[0].Text, string(c.Choices[0].FinishReason)
			}
			if diff := cmp.Diff(tc.sdk, v); diff != "" {
				t.Errorf("SDK view (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPassthroughWithoutAnAnswerFails(t *testing.T) {
	t.Parallel()
	enc := Protocol{}.Encoder(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil), &corev1.GenerateRequest{})
	_ = enc.Start(&corev1.Start{Passthrough: true})
	if err := enc.Finish(); err == nil {
		t.Fatal("Finish without a native answer succeeded")
	}
}

// Event constructors; front packages do not import core (design.md import rules), so the
// tests build events themselves.
func startEv(s *corev1.Start) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Start{Start: s}}
}

func nativeEv(data string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Native{Native: &corev1.Native{Data: []byte(data)}}}
}

func textEv(s string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Text{Text: &corev1.TextDelta{Text: s}}}
}

func reasoningEv(text, signature string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Reasoning{Reasoning: &corev1.ReasoningDelta{Text: text, Signature: signature}}}
}

func toolCallEv(index int32, id, name string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolCall{ToolCall: &corev1.ToolCallStart{Index: index, Id: id, Name: name}}}
}

func toolArgsEv(index int32, fragment string) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_ToolArguments{ToolArguments: &corev1.ToolCallDelta{Index: index, Arguments: fragment}}}
}

func finishEv(r corev1.FinishReason) *corev1.GenerateEvent {
	return &corev1.GenerateEvent{Event: &corev1.GenerateEvent_Finish{Finish: &corev1.Finish{Reason: r}}}
}
