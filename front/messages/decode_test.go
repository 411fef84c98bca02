package messages

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

func newRequest(headers map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/v1/messages?beta=true", nil)
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

var sdkHeaders = map[string]string{"anthropic-version": "2023-06-01"}

func TestDecodeChecksTheVersionHeader(t *testing.T) {
	t.Parallel()
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name    string
		headers map[string]string
		wantErr bool
		wantMsg string // a part of the message, when it is an error
	}{
		{"the SDKs' anthropic-version is accepted", map[string]string{"anthropic-version": "2023-06-01"}, false, ""},
		{"the spec's messages-version is accepted (spec 4.2 rule 1)", map[string]string{"messages-version": "2023-06-01"}, false, ""},
		{"both spellings together are accepted when they agree", map[string]string{"messages-version": "2023-06-01", "anthropic-version": "2023-06-01"}, false, ""},
		{"the date @anthropic-ai/sdk 1.x sends is accepted", map[string]string{"anthropic-version": "2026-10-21"}, false, ""},
		{"any other date is accepted too", map[string]string{"messages-version": "2024-01-01"}, false, ""},
		{"a missing version is invalid_request_error", nil, true, "anthropic-version"},
		{"a value that is not a date is rejected, naming the header that carried it", map[string]string{"anthropic-version": "latest"}, true, "anthropic-version \"latest\""},
		{"an impossible month is not a date", map[string]string{"messages-version": "2023-13-01"}, true, "messages-version \"2023-13-01\""},
		{"a wrong spelling beside a right one is rejected", map[string]string{"messages-version": "2023-06-01", "anthropic-version": "v2"}, true, "anthropic-version \"v2\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, p := range []interface {
				Decode(*http.Request, []byte) (*corev1.GenerateRequest, *apierror.Error)
			}{Protocol{}, CountProtocol{}} {
				_, err := p.Decode(newRequest(c.headers), []byte(body))
				if (err != nil) != c.wantErr {
					t.Fatalf("%T: err = %v, want error %v", p, err, c.wantErr)
				}
				if err != nil && err.Code != apierror.InvalidRequest {
					t.Errorf("code = %s", err.Code)
				}
				if err != nil && !strings.Contains(err.Message, c.wantMsg) {
					t.Errorf("message %q does not contain %q", err.Message, c.wantMsg)
				}
			}
		})
	}
}

func TestDecodeRejectsBadBodies(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, body, wantMsg string }{
		{"max_tokens is required on /v1/messages (spec 8 rule 4)", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"max_tokens must be positive", `{"model":"m","max_tokens":0,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"max_tokens must be an integer", `{"model":"m","max_tokens":1.5,"messages":[{"role":"user","content":"hi"}]}`, "max_tokens"},
		{"the body must be JSON", `{"model":`, "JSON"},
		{"the model is required", `{"max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"messages are required", `{"model":"m","max_tokens":5}`, "messages"},
		{"unknown roles are rejected", `{"model":"m","max_tokens":5,"messages":[{"role":"tool","content":"hi"}]}`, "role"},
		{"tool_choice tool needs a name", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"tool_choice":{"type":"tool"}}`, "tool_choice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := Protocol{}.Decode(newRequest(sdkHeaders), []byte(c.body))
			if err == nil {
				t.Fatal("no error")
			}
			if err.Code != apierror.InvalidRequest || !strings.Contains(err.Message, c.wantMsg) {
				t.Errorf("got %s %q, want invalid_request_error mentioning %q", err.Code, err.Message, c.wantMsg)
			}
		})
	}
}

func TestCountRouteNeedsNoMaxTokens(t *testing.T) {
	t.Parallel()
	got, err := CountProtocol{}.Decode(newRequest(sdkHeaders), []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.GetEndpointFamily() != "messages.count_tokens" || got.MaxOutputTokens != nil {
		t.Errorf("family %q, max %v", got.GetEndpointFamily(), got.MaxOutputTokens)
	}
}

func ptr[T any](v T) *T { return &v }

func text(s string) *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Text{Text: s}} }

func TestDecodeBuildsTheCanonicalRequest(t *testing.T) {
	t.Parallel()
	base := func(r *corev1.GenerateRequest) *corev1.GenerateRequest {
		r.Protocol = corev1.Protocol_PROTOCOL_MESSAGES
		r.EndpointFamily = "messages"
		r.Model = "claude-x"
		if r.MaxOutputTokens == nil {
			r.MaxOutputTokens = ptr[int64](100)
		}
		return r
	}
	user := func(parts ...*corev1.Part) *corev1.Message {
		return &corev1.Message{Role: corev1.Role_ROLE_USER, Parts: parts}
	}
	assistant := func(parts ...*corev1.Part) *corev1.Message {
		return &corev1.Message{Role: corev1.Role_ROLE_ASSISTANT, Parts: parts}
	}
	cases := []struct {
		name    string
		body    string
		headers map[string]string
		want    *corev1.GenerateRequest
	}{
		{
			name: "a minimal request",
			body: `{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}`,
			want: base(&corev1.GenerateRequest{Messages: []*corev1.Message{user(text("Hi"))}, Parameters: []string{"max_tokens"}}),
		},
		{
			name: "system blocks are joined and a trailing system turn is hoisted, as Claude Code sends it",
			body: `{"model":"claude-x","max_tokens":100,"stream":true,
				"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}},{"type":"text","text":"Be terse."}],
				"messages":[{"role":"user","content":[{"type":"text","text":"fix it"}]},{"role":"system","content":"Reminder: tests."}]}`,
			want: base(&corev1.GenerateRequest{
				Stream: true, System: "You are Claude Code.\n\nBe terse.\n\nReminder: tests.",
				Messages: []*corev1.Message{user(text("fix it"))}, Parameters: []string{"max_tokens", "stream"},
			}),
		},
		{
			name: "tool results split over two user turns merge into one, and take the tool's name from its tool_use",
			body: `{"model":"claude-x","max_tokens":100,"messages":[
				{"role":"user","content":"weather and time?"},
				{"role":"assistant","content":[{"type":"thinking","thinking":"two calls","signature":"sig"},{"type":"text","text":"Checking."},
					{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{ "city" : "Oslo" }},
					{"type":"tool_use","id":"toolu_2","name":"get_time","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"sunny"}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"no"},{"type":"text","text":"clock"}]},{"type":"text","text":"thanks"}]}]}`,
			want: base(&corev1.GenerateRequest{
				Parameters: []string{"max_tokens"},
				Messages: []*corev1.Message{
					user(text("weather and time?")),
					assistant(
						&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: "two calls", Signature: "sig"}}},
						text("Checking."),
						&corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "toolu_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
						&corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: "toolu_2", Name: "get_time", Arguments: `{}`}}},
					),
					user(
						&corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "toolu_1", Name: "get_weather", Content: "sunny"}}},
						&corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: "toolu_2", Name: "get_time", Content: "no\nclock", IsError: true}}},
						text("thanks"),
					),
				},
			}),
		},
		{
			name: "images, redacted thinking and text documents map; server-tool blocks are left to passthrough",
			body: `{"model":"claude-x","max_tokens":100,"messages":[
				{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}},
					{"type":"image","source":{"type":"url","url":"https://e.x/a.jpg"}},
					{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc body"}}]},
				{"role":"assistant","content":[{"type":"redacted_thinking","data":"opaque"},{"type":"server_tool_use","id":"srv","name":"web_search","input":{}}]}]}`,
			want: base(&corev1.GenerateRequest{
				Parameters: []string{"max_tokens"},
				Messages: []*corev1.Message{
					user(
						&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{MimeType: "image/png", DataBase64: "AAAA"}}},
						&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "https://e.x/a.jpg"}}},
						text("doc body"),
					),
					assistant(&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{RedactedData: "opaque"}}}),
				},
			}),
		},
		{
			name:    "sampling, tools, choice, thinking, output config and metadata map to canonical names",
			headers: map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14"},
			body: `{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":"Hi"}],
				"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END"],"metadata":{"user_id":"u-1"},
				"tools":[{"name":"get_weather","description":"w","input_schema":{"type":"object", "properties":{}}},
					{"type":"web_search_20250305","name":"web_search","max_uses":3}],
				"tool_choice":{"type":"any","disable_parallel_tool_use":true},
				"thinking":{"type":"enabled","budget_tokens":2048},
				"output_config":{"effort":"high","format":{"type":"json_schema","schema":{"type":"object"}}},
				"context_management":{"edits":[]}}`,
			want: base(&corev1.GenerateRequest{
				Messages:    []*corev1.Message{user(text("Hi"))},
				Temperature: ptr(0.5), TopP: ptr(0.9), TopK: ptr[int32](40), Stop: []string{"END"}, User: "u-1",
				Tools:             []*corev1.Tool{{Name: "get_weather", Description: "w", Parameters: `{"type":"object","properties":{}}`}},
				ToolChoice:        &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_REQUIRED},
				ParallelToolCalls: ptr(false),
				Reasoning:         &corev1.Reasoning{BudgetTokens: 2048, IncludeThoughts: true, Effort: "high"},
				ResponseFormat:    &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Schema: `{"type":"object"}`},
				ForwardHeaders:    map[string]string{"anthropic-beta": "interleaved-thinking-2025-05-14"},
				Parameters:        []string{"temperature", "top_p", "max_tokens", "stop", "response_format", "tools", "tool_choice", "user"},
			}),
		},
		{
			name: "adaptive thinking with omitted display and a named tool",
			body: `{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":"Hi"}],
				"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},
				"thinking":{"type":"adaptive","display":"omitted"}}`,
			want: base(&corev1.GenerateRequest{
				Messages:   []*corev1.Message{user(text("Hi"))},
				Tools:      []*corev1.Tool{{Name: "f", Parameters: `{"type":"object"}`}},
				ToolChoice: &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: "f"},
				Reasoning:  &corev1.Reasoning{},
				Parameters: []string{"max_tokens", "tools", "tool_choice"},
			}),
		},
		{
			name: "disabled thinking says so",
			body: `{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":"Hi"}],"thinking":{"type":"disabled"}}`,
			want: base(&corev1.GenerateRequest{
				Messages: []*corev1.Message{user(text("Hi"))}, Reasoning: &corev1.Reasoning{Disabled: true}, Parameters: []string{"max_tokens"},
			}),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{"anthropic-version": "2023-06-01"}
			for k, v := range c.headers {
				h[k] = v
			}
			got, err := Protocol{}.Decode(newRequest(h), []byte(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// The decoded request must survive a proto round trip (core receives it over gRPC).
func TestDecodedRequestIsAValidProto(t *testing.T) {
	t.Parallel()
	got, err := Protocol{}.Decode(newRequest(sdkHeaders), []byte(`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"ü"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proto.Marshal(got); err != nil {
		t.Fatal(err)
	}
}
