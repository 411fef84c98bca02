package contentgen

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

func TestSplitPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, model, action string
		ok                        bool
	}{
		{"plain model", "/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", "generateContent", true},
		{"streaming action", "/v1beta/models/m:streamGenerateContent", "m", "streamGenerateContent", true},
		{"model with a slash", "/v1beta/models/org/model-1:countTokens", "org/model-1", "countTokens", true},
		{"model with colons splits at the last one", "/v1beta/models/ft:gpt:org:v1:generateContent", "ft:gpt:org:v1", "generateContent", true},
		{"doubled models/ prefix is stripped", "/v1beta/models/models/gemini-2.5-pro:generateContent", "gemini-2.5-pro", "generateContent", true},
		{"no action", "/v1beta/models/gemini-2.5-flash", "", "", false},
		{"empty model", "/v1beta/models/:generateContent", "", "", false},
		{"empty action", "/v1beta/models/m:", "", "", false},
		{"other prefix", "/v1/models/m:generateContent", "", "", false},
		{"slash after the last colon", "/v1beta/models/a:b/c", "", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model, action, ok := SplitPath(tc.path)
			if model != tc.model || action != tc.action || ok != tc.ok {
				t.Errorf("SplitPath(%q) = %q, %q, %v; want %q, %q, %v", tc.path, model, action, ok, tc.model, tc.action, tc.ok)
			}
		})
	}
}

func text(s string) *corev1.Part { return &corev1.Part{Kind: &corev1.Part_Text{Text: s}} }

func user(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_USER, Parts: parts}
}

func model(parts ...*corev1.Part) *corev1.Message {
	return &corev1.Message{Role: corev1.Role_ROLE_ASSISTANT, Parts: parts}
}

func call(id, name, args, sig string) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolCall{ToolCall: &corev1.ToolCall{Id: id, Name: name, Arguments: args, Signature: sig}}}
}

func result(id, name, content string, isErr bool) *corev1.Part {
	return &corev1.Part{Kind: &corev1.Part_ToolResult{ToolResult: &corev1.ToolResult{CallId: id, Name: name, Content: content, IsError: isErr}}}
}

// base is what every successful generate decode has in common.
func base(stream bool, m ...*corev1.Message) *corev1.GenerateRequest {
	return &corev1.GenerateRequest{
		EndpointFamily: FamilyGenerate, Protocol: corev1.Protocol_PROTOCOL_CONTENT_GENERATION,
		Model: "gemini-2.5-flash", Stream: stream, Messages: m,
	}
}

const fullCamel = `{
 "systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Use metric units."}]},
 "contents":[{"role":"user","parts":[{"text":"Weather?"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}}]}],
 "tools":[{"functionDeclarations":[
   {"name":"get_weather","description":"Look it up","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"},"type":{"type":"STRING"}},"required":["city"]}},
   {"name":"now","parametersJsonSchema":{"type":"object","additionalProperties":false}},
   {"name":"noop"}]}],
 "toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}},
 "generationConfig":{"maxOutputTokens":256,"temperature":0.5,"topP":0.9,"topK":40,"stopSequences":["END"],
   "candidateCount":2,"seed":7,"presencePenalty":0.1,"frequencyPenalty":0.2,
   "responseMimeType":"application/json","responseJsonSchema":{"type":"object"},
   "responseLogprobs":true,"logprobs":3,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":2048}}}`

const fullSnake = `{
 "system_instruction":{"parts":[{"text":"Be brief."},{"text":"Use metric units."}]},
 "contents":[{"role":"user","parts":[{"text":"Weather?"},{"inline_data":{"mime_type":"image/png","data":"iVBO"}}]}],
 "tools":[{"function_declarations":[
   {"name":"get_weather","description":"Look it up","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"},"type":{"type":"STRING"}},"required":["city"]}},
   {"name":"now","parameters_json_schema":{"type":"object","additionalProperties":false}},
   {"name":"noop"}]}],
 "tool_config":{"function_calling_config":{"mode":"ANY","allowed_function_names":["get_weather"]}},
 "generation_config":{"max_output_tokens":256,"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END"],
   "candidate_count":2,"seed":7,"presence_penalty":0.1,"frequency_penalty":0.2,
   "response_mime_type":"application/json","response_json_schema":{"type":"object"},
   "response_logprobs":true,"logprobs":3,"thinking_config":{"include_thoughts":true,"thinking_budget":2048}}}`

func fullWant() *corev1.GenerateRequest {
	r := base(true, user(text("Weather?"), &corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{MimeType: "image/png", DataBase64: "iVBO"}}}))
	r.System = "Be brief.\n\nUse metric units."
	r.Tools = []*corev1.Tool{
		{Name: "get_weather", Description: "Look it up", Parameters: `{"properties":{"city":{"type":"string"},"type":{"type":"string"}},"required":["city"],"type":"object"}`},
		{Name: "now", Parameters: `{"type":"object","additionalProperties":false}`},
		{Name: "noop", Parameters: emptySchema},
	}
	r.ToolChoice = &corev1.ToolChoice{Mode: corev1.ToolChoice_MODE_NAMED, Name: "get_weather"}
	r.MaxOutputTokens = proto.Int64(256)
	r.Temperature = proto.Float64(0.5)
	r.TopP = proto.Float64(0.9)
	r.TopK = proto.Int32(40)
	r.Stop = []string{"END"}
	r.N = proto.Int32(2)
	r.Seed = proto.Int64(7)
	r.PresencePenalty = proto.Float64(0.1)
	r.FrequencyPenalty = proto.Float64(0.2)
	r.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_SCHEMA, Name: "response", Schema: `{"type":"object"}`}
	r.Logprobs = true
	r.TopLogprobs = proto.Int32(3)
	r.Reasoning = &corev1.Reasoning{IncludeThoughts: true, BudgetTokens: 2048}
	r.Parameters = []string{"temperature", "top_p", "max_tokens", "frequency_penalty", "presence_penalty", "stop", "seed", "n", "stream", "response_format", "tools", "tool_choice", "logprobs", "top_logprobs"}
	return r
}

func TestDecode(t *testing.T) {
	t.Parallel()
	const flash = "/v1beta/models/gemini-2.5-flash:generateContent"
	const stream = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	cases := []struct {
		name, path, body string
		want             *corev1.GenerateRequest
		wantErr          string // substring of the invalid_request_error message
	}{
		{
			name: "minimal request takes the model from the path",
			path: flash, body: `{"contents":[{"parts":[{"text":"Hi"}]}]}`,
			want: base(false, user(text("Hi"))),
		},
		{name: "camelCase request maps every field", path: stream, body: fullCamel, want: fullWant()},
		{name: "snake_case request maps like camelCase", path: stream, body: fullSnake, want: fullWant()},
		{
			name: "both spellings of one field are rejected", path: flash,
			body:    `{"contents":[{"parts":[{"text":"Hi"}]}],"generationConfig":{},"generation_config":{}}`,
			wantErr: `both "generationConfig" and "generation_config"`,
		},
		{
			name: "body model equal to the path model is accepted with the models/ prefix", path: flash,
			body: `{"model":"models/gemini-2.5-flash","contents":[{"parts":[{"text":"Hi"}]}]}`,
			want: base(false, user(text("Hi"))),
		},
		{
			name: "body model equal to the path model is accepted bare", path: flash,
			body: `{"model":"gemini-2.5-flash","contents":[{"parts":[{"text":"Hi"}]}]}`,
			want: base(false, user(text("Hi"))),
		},
		{
			name: "body model different from the path model is rejected", path: flash,
			body:    `{"model":"models/gemini-2.5-pro","contents":[{"parts":[{"text":"Hi"}]}]}`,
			wantErr: "does not match",
		},
		{
			name: "model ids with slash and colon come from the path whole",
			path: "/v1beta/models/tunedModels/org:v2:streamGenerateContent",
			body: `{"model":"models/tunedModels/org:v2","contents":[{"parts":[{"text":"Hi"}]}]}`,
			want: func() *corev1.GenerateRequest {
				r := base(true, user(text("Hi")))
				r.Model = "tunedModels/org:v2"
				r.Parameters = []string{"stream"}
				return r
			}(),
		},
		{
			name: "function calls without ids get deterministic ids that their responses find",
			path: flash,
			body: `{"contents":[
			  {"role":"user","parts":[{"text":"Weather in Oslo and Bergen?"}]},
			  {"role":"model","parts":[
			    {"text":"Checking.","thoughtSignature":"c2ln"},
			    {"functionCall":{"name":"get_weather","args":{"city": "Oslo"}},"thoughtSignature":"c2lnMg=="},
			    {"functionCall":{"name":"get_time"}},
			    {"functionCall":{"id":"given","name":"get_weather","args":{"city":"Bergen"}}}]},
			  {"role":"user","parts":[
			    {"functionResponse":{"name":"get_time","response":{"result":"noon"}}},
			    {"functionResponse":{"name":"get_weather","response":{"result":"14C"}}},
			    {"functionResponse":{"id":"given","name":"get_weather","response":{"error":"down"}}}]}]}`,
			want: base(false,
				user(text("Weather in Oslo and Bergen?")),
				model(thinking("", "c2ln"), text("Checking."),
					call("call_0", "get_weather", `{"city":"Oslo"}`, "c2lnMg=="),
					call("call_1", "get_time", `{}`, ""),
					call("given", "get_weather", `{"city":"Bergen"}`, "")),
				user(result("call_1", "get_time", `{"result":"noon"}`, false),
					result("call_0", "get_weather", `{"result":"14C"}`, false),
					result("given", "get_weather", `{"error":"down"}`, true))),
		},
		{
			name: "thought parts become thinking with their signature", path: flash,
			body: `{"contents":[{"role":"user","parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Pondering","thought":true,"thoughtSignature":"c2ln"},{"text":"Hello"}]}]}`,
			want: base(false, user(text("Hi")), model(thinking("Pondering", "c2ln"), text("Hello"))),
		},
		{
			name: "file data becomes an image url", path: flash,
			body: `{"contents":[{"parts":[{"file_data":{"mime_type":"image/jpeg","file_uri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}}]}]}`,
			want: base(false, user(&corev1.Part{Kind: &corev1.Part_Image{Image: &corev1.Image{MimeType: "image/jpeg", Url: "https://generativelanguage.googleapis.com/v1beta/files/abc"}}})),
		},
		{
			name: "thinking budget zero turns reasoning off", path: flash,
			body: `{"contents":[{"parts":[{"text":"Hi"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":0,"thinkingLevel":"HIGH"}}}`,
			want: func() *corev1.GenerateRequest {
				r := base(false, user(text("Hi")))
				r.Reasoning = &corev1.Reasoning{Disabled: true, Effort: "high"}
				return r
			}(),
		},
		{
			name: "JSON output without a schema is a JSON object format", path: flash,
			body: `{"contents":[{"parts":[{"text":"Hi"}]}],"generationConfig":{"responseMimeType":"application/json"}}`,
			want: func() *corev1.GenerateRequest {
				r := base(false, user(text("Hi")))
				r.ResponseFormat = &corev1.ResponseFormat{Type: corev1.ResponseFormat_TYPE_JSON_OBJECT}
				r.Parameters = []string{"response_format"}
				return r
			}(),
		},
		{name: "invalid JSON is rejected", path: flash, body: `{"contents":`, wantErr: "not valid JSON"},
		{name: "empty contents are rejected", path: flash, body: `{"contents":[]}`, wantErr: "contents is required"},
		{name: "an unknown role is rejected", path: flash, body: `{"contents":[{"role":"system","parts":[{"text":"x"}]}]}`, wantErr: `role "system"`},
		{name: "the counting action is not a generation route", path: "/v1beta/models/m:countTokens", body: `{"contents":[{"parts":[{"text":"x"}]}]}`, wantErr: "not a content-generation path"},
		{
			name: "parameters and parametersJsonSchema together are rejected", path: flash,
			body:    `{"contents":[{"parts":[{"text":"x"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":{},"parametersJsonSchema":{}}]}]}`,
			wantErr: "mutually exclusive",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", tc.path, strings.NewReader(tc.body))
			got, apiErr := Protocol{}.Decode(r, []byte(tc.body))
			if tc.wantErr != "" {
				if apiErr == nil {
					t.Fatalf("Decode succeeded, want an error containing %q", tc.wantErr)
				}
				if apiErr.Code != apierror.InvalidRequest || !strings.Contains(apiErr.Message, tc.wantErr) {
					t.Fatalf("error = %v, want invalid_request_error containing %q", apiErr, tc.wantErr)
				}
				return
			}
			if apiErr != nil {
				t.Fatalf("Decode: %v", apiErr)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCountDecode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		want       *corev1.GenerateRequest
		wantErr    string
	}{
		{
			name: "contents form",
			body: `{"contents":[{"parts":[{"text":"Hi"}]}]}`,
			want: &corev1.GenerateRequest{EndpointFamily: FamilyCount, Protocol: corev1.Protocol_PROTOCOL_CONTENT_GENERATION, Model: "m", Messages: []*corev1.Message{user(text("Hi"))}},
		},
		{
			name: "generateContentRequest form carries the system instruction",
			body: `{"generateContentRequest":{"model":"models/m","systemInstruction":{"parts":[{"text":"S"}]},"contents":[{"parts":[{"text":"Hi"}]}]}}`,
			want: &corev1.GenerateRequest{EndpointFamily: FamilyCount, Protocol: corev1.Protocol_PROTOCOL_CONTENT_GENERATION, Model: "m", System: "S", Messages: []*corev1.Message{user(text("Hi"))}},
		},
		{name: "both forms are rejected", body: `{"contents":[{"parts":[{"text":"Hi"}]}],"generateContentRequest":{"contents":[{"parts":[{"text":"Hi"}]}]}}`, wantErr: "mutually exclusive"},
		{name: "a different model inside is rejected", body: `{"generateContentRequest":{"model":"models/other","contents":[{"parts":[{"text":"Hi"}]}]}}`, wantErr: "does not match"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "/v1beta/models/m:countTokens", strings.NewReader(tc.body))
			got, apiErr := CountProtocol{}.Decode(r, []byte(tc.body))
			if tc.wantErr != "" {
				if apiErr == nil || !strings.Contains(apiErr.Message, tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", apiErr, tc.wantErr)
				}
				return
			}
			if apiErr != nil {
				t.Fatalf("Decode: %v", apiErr)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCountRender(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	CountProtocol{}.Render(w, httptest.NewRequest("POST", "/v1beta/models/m:countTokens", nil), 31)
	if got, want := w.Body.String(), "{\"totalTokens\":31}\n"; got != want || w.Code != 200 {
		t.Errorf("got %d %q, want 200 %q", w.Code, got, want)
	}
}
