package chatcompletions

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

func ptr[T any](v T) *T { return &v }

func text(s string) *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Text{Text: s}} }

func user(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_USER, Parts: parts}
}

func assistant(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_ASSISTANT, Parts: parts}
}

func call(id, name, args string) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: id, Name: name, Arguments: args}}}
}

func result(id, name, content string) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: id, Name: name, Content: content}}}
}

// base is the request every successful case starts from; each case says what differs.
func base(mod func(r *corev1.GenerateRequest)) *corev1.GenerateRequest {
	r := &corev1.GenerateRequest{
		EndpointFamily: "chat.completions", Protocol: corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS, Model: "gpt-4o-mini",
		Messages: []*corev1.Message{user(text("Hi"))},
	}
	if mod != nil {
		mod(r)
	}
	return r
}

const hi = `"messages":[{"role":"user","content":"Hi"}]`

func TestDecode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		body string
		want *corev1.GenerateRequest
	}{
		{"the minimal body of spec 4.2", `{"model":"gpt-4o-mini",` + hi + `,"max_completion_tokens":64}`,
			base(func(r *corev1.GenerateRequest) {
				r.MaxOutputTokens = ptr(int64(64))
				r.Parameters = []string{"max_tokens"}
			})},
		{"max_tokens is the deprecated spelling of the output limit", `{"model":"gpt-4o-mini",` + hi + `,"max_tokens":32}`,
			base(func(r *corev1.GenerateRequest) {
				r.MaxOutputTokens = ptr(int64(32))
				r.Parameters = []string{"max_tokens"}
			})},
		{"max_completion_tokens wins over max_tokens", `{"model":"gpt-4o-mini",` + hi + `,"max_tokens":32,"max_completion_tokens":64}`,
			base(func(r *corev1.GenerateRequest) {
				r.MaxOutputTokens = ptr(int64(64))
				r.Parameters = []string{"max_tokens"}
			})},
		{"stream:true is a stream and uses the stream parameter", `{"model":"gpt-4o-mini",` + hi + `,"stream":true,"stream_options":{"include_usage":false}}`,
			base(func(r *corev1.GenerateRequest) { r.Stream = true; r.Parameters = []string{"stream"} })},
		{"stream:false and logprobs:false use no parameter", `{"model":"gpt-4o-mini",` + hi + `,"stream":false,"logprobs":false}`,
			base(nil)},
		{"unknown fields are tolerated", `{"model":"gpt-4o-mini",` + hi + `,"store":true,"metadata":{"a":"b"},"verbosity":"low","modalities":["text"]}`,
			base(nil)},
		{"system and developer messages anywhere are hoisted and joined in order",
			`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},` +
				`{"role":"developer","content":[{"type":"text","text":"Use metric."},{"type":"text","text":"No emoji."}]},{"role":"system","content":""}]}`,
			base(func(r *corev1.GenerateRequest) { r.System = "Be brief.\n\nUse metric.\n\nNo emoji." })},
		{"user parts: text, data URL image, http image; audio has no canonical form",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},` +
				`{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}},` +
				`{"type":"image_url","image_url":{"url":"HTTPS://example.com/a.jpg"}},` +
				`{"type":"input_audio","input_audio":{"data":"UklGR","format":"wav"}}]}]}`,
			base(func(r *corev1.GenerateRequest) {
				r.Messages = []*corev1.Message{user(text("What is this?"),
					&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{MimeType: "image/png", DataBase64: "iVBORw0KGgo="}}},
					&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{Url: "HTTPS://example.com/a.jpg"}}})}
			})},
		{"a tool loop: calls keep their JSON text, empty arguments become {}, consecutive tool messages merge and find their names",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Weather?"},` +
				`{"role":"assistant","content":null,"tool_calls":[` +
				`{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},` +
				`{"id":"call_2","type":"function","function":{"name":"get_time","arguments":""}}]},` +
				`{"role":"tool","tool_call_id":"call_1","content":"{\"c\":3}"},` +
				`{"role":"system","content":"Answer in Norwegian."},` +
				`{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"12:00"}]},` +
				`{"role":"user","content":"And tomorrow?"},` +
				`{"role":"tool","tool_call_id":"call_9","name":"legacy","content":"late"}]}`,
			base(func(r *corev1.GenerateRequest) {
				r.System = "Answer in Norwegian."
				r.Messages = []*corev1.Message{
					user(text("Weather?")),
					assistant(call("call_1", "get_weather", `{"city":"Oslo"}`), call("call_2", "get_time", "{}")),
					user(result("call_1", "get_weather", `{"c":3}`), result("call_2", "get_time", "12:00")),
					user(text("And tomorrow?")),
					user(result("call_9", "legacy", "late")),
				}
			})},
		{"assistant history: reasoning_content, text and refusal parts; an empty assistant turn is dropped",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"},` +
				`{"role":"assistant","reasoning_content":"greet back","content":[{"type":"text","text":"Hello"},{"type":"refusal","refusal":"No."}]},` +
				`{"role":"assistant","content":""},{"role":"user","content":"Bye"}]}`,
			base(func(r *corev1.GenerateRequest) {
				r.Messages = []*corev1.Message{user(text("Hi")),
					assistant(&corev1.Part{Kind: &corev1.Part_Thinking{Thinking: &corev1.Thinking{Text: "greet back"}}}, text("Hello"), text("No.")),
					user(text("Bye"))}
			})},
		{"function tools are kept, other tools ignored, named tool_choice",
			`{"model":"gpt-4o-mini",` + hi + `,"tools":[{"type":"function","function":{"name":"get_weather","description":"d",` +
				`"parameters":{"type":"object"},"strict":true}},{"type":"custom","custom":{"name":"grammar"}},{"type":"function","function":{"name":"noargs"}}],` +
				`"tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false}`,
			base(func(r *corev1.GenerateRequest) {
				r.Tools = []*corev1.Tool{{Name: "get_weather", Description: "d", Parameters: `{"type":"object"}`, Strict: ptr(true)}, {Name: "noargs"}}
				r.ToolChoice = &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: "get_weather"}
				r.ParallelToolCalls = ptr(false)
				r.Parameters = []string{"tools", "tool_choice"}
			})},
		{"tool_choice required", `{"model":"gpt-4o-mini",` + hi + `,"tool_choice":"required"}`,
			base(func(r *corev1.GenerateRequest) {
				r.ToolChoice = &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_REQUIRED}
				r.Parameters = []string{"tool_choice"}
			})},
		{"tool_choice none", `{"model":"gpt-4o-mini",` + hi + `,"tool_choice":"none"}`,
			base(func(r *corev1.GenerateRequest) {
				r.ToolChoice = &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NONE}
				r.Parameters = []string{"tool_choice"}
			})},
		{"tool_choice allowed_tools keeps its mode", `{"model":"gpt-4o-mini",` + hi + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}}`,
			base(func(r *corev1.GenerateRequest) {
				r.ToolChoice = &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_AUTO}
				r.Parameters = []string{"tool_choice"}
			})},
		{"response_format json_schema", `{"model":"gpt-4o-mini",` + hi + `,"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"},"strict":true}}}`,
			base(func(r *corev1.GenerateRequest) {
				r.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Name: "w", Schema: `{"type":"object"}`, Strict: ptr(true)}
				r.Parameters = []string{"response_format"}
			})},
		{"response_format json_object", `{"model":"gpt-4o-mini",` + hi + `,"response_format":{"type":"json_object"}}`,
			base(func(r *corev1.GenerateRequest) {
				r.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_OBJECT}
				r.Parameters = []string{"response_format"}
			})},
		{"response_format text", `{"model":"gpt-4o-mini",` + hi + `,"response_format":{"type":"text"}}`,
			base(func(r *corev1.GenerateRequest) {
				r.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_TEXT}
				r.Parameters = []string{"response_format"}
			})},
		{"stop as a string", `{"model":"gpt-4o-mini",` + hi + `,"stop":"END"}`,
			base(func(r *corev1.GenerateRequest) { r.Stop = []string{"END"}; r.Parameters = []string{"stop"} })},
		{"every sampling parameter, in the spec's order",
			`{"model":"gpt-4o-mini",` + hi + `,"user":"u1","logit_bias":{"50256":-100},"top_logprobs":3,"logprobs":true,"n":2,"seed":7,` +
				`"stop":["a","b"],"presence_penalty":0.5,"frequency_penalty":-0.5,"max_tokens":10,"top_p":0.9,"temperature":0.3,` +
				`"reasoning_effort":"low","safety_identifier":"hashed"}`,
			base(func(r *corev1.GenerateRequest) {
				r.Temperature, r.TopP, r.MaxOutputTokens = ptr(0.3), ptr(0.9), ptr(int64(10))
				r.FrequencyPenalty, r.PresencePenalty = ptr(-0.5), ptr(0.5)
				r.Stop, r.Seed, r.N = []string{"a", "b"}, ptr(int64(7)), ptr(int32(2))
				r.Logprobs, r.TopLogprobs, r.User = true, ptr(int32(3)), "u1"
				r.Reasoning = &corev1.Reasoning{Effort: "low"}
				r.Parameters = []string{"temperature", "top_p", "max_tokens", "frequency_penalty", "presence_penalty", "stop", "seed", "n",
					"logprobs", "top_logprobs", "logit_bias", "user"}
			})},
		{"safety_identifier is the user label when user is absent; reasoning_effort none disables reasoning",
			`{"model":"gpt-4o-mini",` + hi + `,"safety_identifier":"hashed","reasoning_effort":"none"}`,
			base(func(r *corev1.GenerateRequest) {
				r.User = "hashed"
				r.Reasoning = &corev1.Reasoning{Effort: "none", Disabled: true}
				r.Parameters = []string{"user"}
			})},
		{"null optional fields are absent", `{"model":"gpt-4o-mini",` + hi + `,"temperature":null,"stop":null,"tool_choice":null,"reasoning_effort":null,"response_format":null}`,
			base(nil)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Protocol{}.Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(tc.body))
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
		{"a body that is not JSON", `{"model":`, apierror.InvalidRequest, "not a valid chat-completions request"},
		{"a body that is not an object", `[1,2]`, apierror.InvalidRequest, "not a valid"},
		{"no model", `{` + hi + `}`, apierror.InvalidRequest, "model is required"},
		{"no messages", `{"model":"m"}`, apierror.InvalidRequest, "messages must be a non-empty array"},
		{"empty messages", `{"model":"m","messages":[]}`, apierror.InvalidRequest, "non-empty"},
		{"only system messages", `{"model":"m","messages":[{"role":"system","content":"x"}]}`, apierror.InvalidRequest, "must contain a user"},
		{"a message without a role", `{"model":"m","messages":[{"content":"x"}]}`, apierror.InvalidRequest, "messages[0].role is required"},
		{"an unknown role", `{"model":"m","messages":[{"role":"function","name":"f","content":"x"}]}`, apierror.InvalidRequest, `role "function"`},
		{"a user message without content", `{"model":"m","messages":[{"role":"user"}]}`, apierror.InvalidRequest, "content is required"},
		{"a user message with null content", `{"model":"m","messages":[{"role":"user","content":null}]}`, apierror.InvalidRequest, "content is required"},
		{"content that is a number", `{"model":"m","messages":[{"role":"user","content":5}]}`, apierror.InvalidRequest, "string or an array"},
		{"a part without a type", `{"model":"m","messages":[{"role":"user","content":[{"text":"x"}]}]}`, apierror.InvalidRequest, "type is required"},
		{"an image without a URL", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]}`, apierror.InvalidRequest, "url is required"},
		{"an image with a file URL", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]}]}`, apierror.InvalidRequest, "http(s) or data URL"},
		{"a data URL that is not base64", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, apierror.InvalidRequest, "data:<media type>;base64"},
		{"a data URL without a media type", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:;base64,abc"}}]}]}`, apierror.InvalidRequest, "data:<media type>;base64"},
		{"an image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]},{"role":"user","content":"x"}]}`, apierror.InvalidRequest, "only text parts"},
		{"an image in an assistant message", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, apierror.InvalidRequest, "text or refusal parts"},
		{"a tool call without an id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, apierror.InvalidRequest, "needs an id and a function name"},
		{"a tool call of another type", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"g"}}]}]}`, apierror.InvalidRequest, `type "custom"`},
		{"a tool message without tool_call_id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, apierror.InvalidRequest, "tool_call_id is required"},
		{"a function tool without a name", `{"model":"m",` + hi + `,"tools":[{"type":"function","function":{"parameters":{}}}]}`, apierror.InvalidRequest, "tools[0].function.name is required"},
		{"an unknown tool_choice string", `{"model":"m",` + hi + `,"tool_choice":"any"}`, apierror.InvalidRequest, `not "any"`},
		{"a named tool_choice without a name", `{"model":"m",` + hi + `,"tool_choice":{"type":"function","function":{}}}`, apierror.InvalidRequest, "tool_choice.function.name is required"},
		{"an unknown tool_choice type", `{"model":"m",` + hi + `,"tool_choice":{"type":"tool","name":"x"}}`, apierror.InvalidRequest, `tool_choice.type "tool"`},
		{"allowed_tools with a bad mode", `{"model":"m",` + hi + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"none"}}}`, apierror.InvalidRequest, "auto or required"},
		{"a tool_choice of the wrong JSON type", `{"model":"m",` + hi + `,"tool_choice":5}`, apierror.InvalidRequest, "tool_choice"},
		{"an unknown response_format", `{"model":"m",` + hi + `,"response_format":{"type":"yaml"}}`, apierror.InvalidRequest, `not "yaml"`},
		{"json_schema without its schema object", `{"model":"m",` + hi + `,"response_format":{"type":"json_schema"}}`, apierror.InvalidRequest, "json_schema is required"},
		{"stop that is a number", `{"model":"m",` + hi + `,"stop":5}`, apierror.InvalidRequest, "not a valid"},
		{"a negative max_completion_tokens", `{"model":"m",` + hi + `,"max_completion_tokens":-1}`, apierror.InvalidRequest, "max_completion_tokens must not be negative"},
		{"a negative max_tokens", `{"model":"m",` + hi + `,"max_tokens":-5}`, apierror.InvalidRequest, "max_tokens must not be negative"},
		{"a fractional max_tokens", `{"model":"m",` + hi + `,"max_tokens":1.5}`, apierror.InvalidRequest, "not a valid"},
		{"a temperature that is a string", `{"model":"m",` + hi + `,"temperature":"hot"}`, apierror.InvalidRequest, "not a valid"},
		{"stream that is a string", `{"model":"m",` + hi + `,"stream":"yes"}`, apierror.InvalidRequest, "not a valid"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := Protocol{}.Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(tc.body))
			if err == nil {
				t.Fatalf("Decode accepted it: %v", got)
			}
			if err.Code != tc.code || !strings.Contains(err.Message, tc.message) {
				t.Errorf("error %s: %q, want %s containing %q", err.Code, err.Message, tc.code, tc.message)
			}
		})
	}
}
