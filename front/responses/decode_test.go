package responses

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

func user(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_USER, Parts: parts}
}

func assistant(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_ASSISTANT, Parts: parts}
}

func text(s string) *corev1.Part { return textPart(s) }

func call(id, name, args, sig string) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: id, Name: name, Arguments: args, Signature: sig}}}
}

func result(id, name, content string) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: id, Name: name, Content: content}}}
}

func thinking(t *corev1.Thinking) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_Thinking{Thinking: t}}
}

func img(i *corev1.Image) *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Image{Image: i}} }

func decode(t *testing.T, p Protocol, body string) (*corev1.GenerateRequest, *apierror.Error) {
	t.Helper()
	return p.Decode(httptest.NewRequest("POST", "/v1/responses", strings.NewReader(body)), []byte(body))
}

func TestDecodeInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body string
		want       *corev1.GenerateRequest
	}{
		{"a string input is one user message",
			`{"model":"m","input":"Hi"}`,
			&corev1.GenerateRequest{Messages: []*corev1.Message{user(text("Hi"))}}},
		{"instructions and system and developer items are hoisted into system, in order",
			`{"model":"m","instructions":"Be brief.","input":[
				{"role":"developer","content":"Use tools."},
				{"role":"user","content":"Hi"},
				{"type":"message","role":"system","content":[{"type":"input_text","text":"Late"},{"type":"input_text","text":"rule"}]}]}`,
			&corev1.GenerateRequest{System: "Be brief.\n\nUse tools.\n\nLate\nrule", Messages: []*corev1.Message{user(text("Hi"))}}},
		{"user content parts: text, data-URL and https images; file inputs and empty text are left to the raw body",
			`{"model":"m","input":[{"role":"user","content":[
				{"type":"input_text","text":"Look"},
				{"type":"input_image","image_url":"data:image/png;base64,iVBORw0K","detail":"high"},
				{"type":"input_image","image_url":"https://example.com/a.jpg"},
				{"type":"input_image","file_id":"file-1"},
				{"type":"input_file","file_id":"file-2"},
				{"type":"input_text","text":""}]}]}`,
			&corev1.GenerateRequest{Messages: []*corev1.Message{user(text("Look"),
				img(&corev1.Image{MimeType: "image/png", DataBase64: "iVBORw0K"}),
				img(&corev1.Image{Url: "https://example.com/a.jpg"}))}}},
		{"the items of one assistant turn form one assistant message; reasoning keeps encrypted_content as the signature",
			`{"model":"m","input":[
				{"role":"user","content":"Weather?"},
				{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Need"},{"type":"summary_text","text":"a tool"}],"encrypted_content":"gAAAA"},
				{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Checking.","annotations":[]}]},
				{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}","status":"completed"},
				{"type":"function_call","call_id":"call_2","name":"get_time","arguments":""},
				{"type":"function_call_output","call_id":"call_1","output":"14C sunny"},
				{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"12:00"},{"type":"input_image","image_url":"https://x/y.png"},{"type":"input_text","text":"CET"}]},
				{"role":"user","content":"Thanks"}]}`,
			&corev1.GenerateRequest{Messages: []*corev1.Message{
				user(text("Weather?")),
				assistant(thinking(&corev1.Thinking{Text: "Need\n\na tool", Signature: "gAAAA"}), text("Checking."),
					call("call_1", "get_weather", `{"city":"Oslo"}`, ""), call("call_2", "get_time", "{}", "")),
				user(result("call_1", "get_weather", "14C sunny"), result("call_2", "get_time", "12:00\nCET")),
				user(text("Thanks"))}}},
		{"a tool output whose call is not in the input (previous_response_id) has no name",
			`{"model":"m","previous_response_id":"resp_0","input":[{"type":"function_call_output","call_id":"call_9","output":"ok"}]}`,
			&corev1.GenerateRequest{Messages: []*corev1.Message{user(result("call_9", "", "ok"))}}},
		{"raw reasoning text is used when there is no summary; empty reasoning items are dropped",
			`{"model":"m","input":[{"role":"user","content":"q"},
				{"type":"reasoning","id":"rs_0","summary":[]},
				{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"raw"}]},
				{"role":"assistant","content":[{"type":"refusal","refusal":"No."}]}]}`,
			&corev1.GenerateRequest{Messages: []*corev1.Message{user(text("q")),
				assistant(thinking(&corev1.Thinking{Text: "raw"}), text("No."))}}},
		{"the gateway's own markers bring back redacted thinking and a function call's signature",
			`{"model":"m","input":[{"role":"user","content":"q"},
				{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gw.redacted:OPAQUE"},
				{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"gw.toolsig:SIG1"},
				{"type":"function_call","call_id":"c1","namespace":"crm","name":"lookup","arguments":"{}"},
				{"type":"function_call","call_id":"c2","name":"plain","arguments":"{}"},
				{"type":"function_call_output","call_id":"c1","output":"found"}]}`,
			&corev1.GenerateRequest{Messages: []*corev1.Message{user(text("q")),
				assistant(thinking(&corev1.Thinking{RedactedData: "OPAQUE"}), call("c1", "crm__lookup", "{}", "SIG1"), call("c2", "plain", "{}", "")),
				user(result("c1", "crm__lookup", "found"))}}},
		{"item references, compaction and hosted-tool items stay in the raw body only",
			`{"model":"m","input":[{"type":"item_reference","id":"msg_0"},{"type":"compaction","id":"cmp_1","encrypted_content":"x"},
				{"type":"web_search_call","id":"ws_1","status":"completed"},{"role":"user","content":"go on"}]}`,
			&corev1.GenerateRequest{Messages: []*corev1.Message{user(text("go on"))}}},
		{"previous_response_id alone needs no input",
			`{"model":"m","previous_response_id":"resp_1"}`,
			&corev1.GenerateRequest{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, apiErr := decode(t, Protocol{}, tc.body)
			if apiErr != nil {
				t.Fatal(apiErr)
			}
			want := proto.Clone(tc.want).(*corev1.GenerateRequest)
			want.Model, want.EndpointFamily, want.Protocol = "m", "responses", corev1.Protocol_PROTOCOL_RESPONSES
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeParameters(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	i32 := func(v int32) *int32 { return &v }
	b := func(v bool) *bool { return &v }
	for _, tc := range []struct {
		name, body string
		want       *corev1.GenerateRequest
	}{
		{"sampling, output limit and stream map to canonical names (spec 2.6)",
			`{"model":"m","input":"x","temperature":0.2,"top_p":0.9,"max_output_tokens":64,"stream":true,"parallel_tool_calls":false,"top_logprobs":3,"include":["message.output_text.logprobs","reasoning.encrypted_content"]}`,
			&corev1.GenerateRequest{Stream: true, Temperature: f(0.2), TopP: f(0.9), MaxOutputTokens: i64(64),
				ParallelToolCalls: b(false), TopLogprobs: i32(3), Logprobs: true,
				Parameters: []string{"temperature", "top_p", "max_tokens", "stream", "logprobs", "top_logprobs"}}},
		{"function tools are kept flat, namespaces are flattened, hosted tools are left out",
			`{"model":"m","input":"x","tools":[
				{"type":"function","name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{}},"strict":true},
				{"type":"web_search"},
				{"type":"namespace","name":"crm","description":"CRM","tools":[{"type":"function","name":"lookup","parameters":null},{"type":"custom","name":"free"}]}],
				"tool_choice":"required"}`,
			&corev1.GenerateRequest{Tools: []*corev1.Tool{
				{Name: "get_weather", Description: "Weather", Parameters: `{"type":"object","properties":{}}`, Strict: b(true)},
				{Name: "crm__lookup"}},
				ToolChoice: &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_REQUIRED},
				Parameters: []string{"tools", "tool_choice"}}},
		{"a named function tool choice",
			`{"model":"m","input":"x","tool_choice":{"type":"function","name":"get_weather"}}`,
			&corev1.GenerateRequest{ToolChoice: &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: "get_weather"},
				Parameters: []string{"tool_choice"}}},
		{"allowed_tools keeps its mode",
			`{"model":"m","input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"a"}]}}`,
			&corev1.GenerateRequest{ToolChoice: &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_AUTO}, Parameters: []string{"tool_choice"}}},
		{"structured output lives in text.format, flat json_schema",
			`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"},"strict":true},"verbosity":"low"}}`,
			&corev1.GenerateRequest{ResponseFormat: &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA,
				Name: "w", Schema: `{"type":"object"}`, Strict: b(true)}, Parameters: []string{"response_format"}}},
		{"text.format text is the default, not a structured-output request",
			`{"model":"m","input":"x","text":{"format":{"type":"text"}}}`,
			&corev1.GenerateRequest{ResponseFormat: &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_TEXT}}},
		{"reasoning effort and summary as Codex sends them",
			`{"model":"m","input":"x","reasoning":{"effort":"high","summary":"auto"}}`,
			&corev1.GenerateRequest{Reasoning: &corev1.Reasoning{Effort: "high", IncludeThoughts: true}}},
		{"reasoning effort none turns reasoning off",
			`{"model":"m","input":"x","reasoning":{"effort":"none"}}`,
			&corev1.GenerateRequest{Reasoning: &corev1.Reasoning{Effort: "none", Disabled: true}}},
		{"safety_identifier is the end-user label, before the older user",
			`{"model":"m","input":"x","user":"old","safety_identifier":"u-42"}`,
			&corev1.GenerateRequest{User: "u-42", Parameters: []string{"user"}}},
		{"user alone is the end-user label",
			`{"model":"m","input":"x","user":"old"}`,
			&corev1.GenerateRequest{User: "old", Parameters: []string{"user"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, apiErr := decode(t, Protocol{}, tc.body)
			if apiErr != nil {
				t.Fatal(apiErr)
			}
			want := proto.Clone(tc.want).(*corev1.GenerateRequest)
			want.Model, want.EndpointFamily, want.Protocol = "m", "responses", corev1.Protocol_PROTOCOL_RESPONSES
			want.Messages = []*corev1.Message{user(text("x"))}
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeCompact(t *testing.T) {
	t.Parallel()
	got, apiErr := decode(t, Protocol{Compact: true},
		`{"model":"gpt-5.1-codex-max","stream":true,"input":[{"role":"user","content":"long history"},{"type":"compaction","id":"cmp_0","encrypted_content":"e"}],"max_output_tokens":100}`)
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	want := &corev1.GenerateRequest{Model: "gpt-5.1-codex-max", EndpointFamily: "responses.compact",
		Protocol: corev1.Protocol_PROTOCOL_RESPONSES_COMPACT, Stream: true, MaxOutputTokens: proto.Int64(100),
		Messages: []*corev1.Message{user(text("long history"))}, Parameters: []string{"max_tokens", "stream"}}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
}

// Codex CLI's request shape (real-clients.md): developer messages, namespace and hosted tools,
// store false, no output limit. It must decode, and translate to something useful.
func TestDecodeCodexRequest(t *testing.T) {
	t.Parallel()
	body := `{"model":"gpt-5-codex","instructions":"You are Codex.","input":[
		{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions>"}]},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"fix the bug"}]}],
		"tools":[{"type":"function","name":"shell","description":"Runs a command","strict":false,"parameters":{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"}}},"required":["command"]}},
		{"type":"namespace","name":"mcp__fs","description":"files","tools":[{"type":"function","name":"read","parameters":{"type":"object"}}]},
		{"type":"web_search"}],
		"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"summary":"auto"},"store":false,"stream":true,
		"include":["reasoning.encrypted_content"],"prompt_cache_key":"019a-uuid","client_metadata":{"k":"v"}}`
	got, apiErr := decode(t, Protocol{}, body)
	if apiErr != nil {
		t.Fatal(apiErr)
	}
	if got.GetSystem() != "You are Codex.\n\n<permissions>" {
		t.Errorf("system = %q", got.GetSystem())
	}
	var names []string
	for _, tool := range got.GetTools() {
		names = append(names, tool.GetName())
	}
	if diff := cmp.Diff([]string{"shell", "mcp__fs__read"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got.MaxOutputTokens != nil {
		t.Errorf("max output tokens = %d, want absent", got.GetMaxOutputTokens())
	}
	if diff := cmp.Diff([]string{"stream", "tools", "tool_choice"}, got.GetParameters()); diff != "" {
		t.Errorf("parameters (-want +got):\n%s", diff)
	}
}

func TestDecodeRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"a body that is not JSON", `{"model":`, "does not match"},
		{"a JSON array body", `[{"model":"m"}]`, "must be a JSON object"},
		{"an empty body", ``, "must be a JSON object"},
		{"no model", `{"input":"x"}`, "model is required"},
		{"no input and no server-side state", `{"model":"m"}`, "input is required"},
		{"an input that is a number", `{"model":"m","input":3}`, "input must be"},
		{"instructions that are not a string", `{"model":"m","input":"x","instructions":{"a":1}}`, "instructions must be a string"},
		{"a message without a role", `{"model":"m","input":[{"content":"x"}]}`, "input[0]: role is required"},
		{"a tool role, which responses does not have", `{"model":"m","input":[{"role":"tool","content":"x"}]}`, `input[0]: role "tool"`},
		{"a function call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0]: call_id is required"},
		{"a function call without name", `{"model":"m","input":[{"type":"function_call","call_id":"c","arguments":"{}"}]}`, "input[0]: name is required"},
		{"a function output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0]: call_id is required"},
		{"a data URL that is not base64", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png,raw"}]}]}`, "input[0]: content[0]: image_url data: URLs"},
		{"an image URL that is neither http(s) nor data", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"ftp://x/y.png"}]}]}`, "http(s) URL"},
		{"an image with neither URL nor file", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`, "image_url or file_id"},
		{"message content that is a number", `{"model":"m","input":[{"role":"user","content":5}]}`, "input"},
		{"an unknown tool_choice string", `{"model":"m","input":"x","tool_choice":"sometimes"}`, `tool_choice "sometimes"`},
		{"a named tool choice without a name", `{"model":"m","input":"x","tool_choice":{"type":"function"}}`, "tool_choice.name is required"},
		{"a function tool without a name", `{"model":"m","input":"x","tools":[{"type":"function","parameters":{}}]}`, "tools[0]: name is required"},
		{"a tool without a type", `{"model":"m","input":"x","tools":[{"name":"f"}]}`, "tools[0]: type is required"},
		{"function parameters that are not an object", `{"model":"m","input":"x","tools":[{"type":"function","name":"f","parameters":"{}"}]}`, "tools[0]: parameters must be"},
		{"json_schema without a schema", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"s"}}}`, "text.format.schema is required"},
		{"an unknown text format", `{"model":"m","input":"x","text":{"format":{"type":"xml"}}}`, `text.format.type "xml"`},
		{"a zero output limit", `{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens must be a positive integer"},
		{"stream that is not a boolean", `{"model":"m","input":"x","stream":"yes"}`, "does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, apiErr := decode(t, Protocol{}, tc.body)
			if apiErr == nil {
				t.Fatal("accepted, want invalid_request_error")
			}
			if apiErr.Code != apierror.InvalidRequest || !strings.Contains(apiErr.Message, tc.want) {
				t.Errorf("error = %s: %s, want invalid_request_error containing %q", apiErr.Code, apiErr.Message, tc.want)
			}
		})
	}
}
