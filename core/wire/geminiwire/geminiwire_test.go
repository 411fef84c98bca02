package geminiwire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const camelRequest = `{
 "model":"models/gemini-2.5-flash",
 "systemInstruction":{"parts":[{"text":"Be brief."}]},
 "contents":[
  {"role":"user","parts":[{"text":"Hi"},{"inlineData":{"mimeType":"image/png","data":"iVBO"}},{"fileData":{"mimeType":"application/pdf","fileUri":"https://x/files/a"}}]},
  {"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"c2ln"}]},
  {"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"14C"}}}]}],
 "tools":[{"functionDeclarations":[{"name":"get_weather","parametersJsonSchema":{"type":"object"}}]},{"googleSearch":{}}],
 "toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}},
 "safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}],
 "cachedContent":"cachedContents/x",
 "generationConfig":{"maxOutputTokens":256,"temperature":0.7,"topP":0.9,"topK":40,"stopSequences":["END"],
  "candidateCount":1,"responseMimeType":"application/json","responseJsonSchema":{"type":"object"},
  "seed":7,"presencePenalty":0.1,"frequencyPenalty":0.2,"responseLogprobs":true,"logprobs":3,
  "thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024,"thinkingLevel":"LOW"},
  "responseModalities":["TEXT"],"mediaResolution":"MEDIA_RESOLUTION_LOW"}}`

const snakeRequest = `{
 "model":"models/gemini-2.5-flash",
 "system_instruction":{"parts":[{"text":"Be brief."}]},
 "contents":[
  {"role":"user","parts":[{"text":"Hi"},{"inline_data":{"mime_type":"image/png","data":"iVBO"}},{"file_data":{"mime_type":"application/pdf","file_uri":"https://x/files/a"}}]},
  {"role":"model","parts":[{"function_call":{"name":"get_weather","args":{"city":"Oslo"}},"thought_signature":"c2ln"}]},
  {"role":"user","parts":[{"function_response":{"name":"get_weather","response":{"result":"14C"}}}]}],
 "tools":[{"function_declarations":[{"name":"get_weather","parameters_json_schema":{"type":"object"}}]},{"google_search":{}}],
 "tool_config":{"function_calling_config":{"mode":"ANY","allowed_function_names":["get_weather"]}},
 "safety_settings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}],
 "cached_content":"cachedContents/x",
 "generation_config":{"max_output_tokens":256,"temperature":0.7,"top_p":0.9,"top_k":40,"stop_sequences":["END"],
  "candidate_count":1,"response_mime_type":"application/json","response_json_schema":{"type":"object"},
  "seed":7,"presence_penalty":0.1,"frequency_penalty":0.2,"response_logprobs":true,"logprobs":3,
  "thinking_config":{"include_thoughts":true,"thinking_budget":1024,"thinking_level":"LOW"},
  "response_modalities":["TEXT"],"media_resolution":"MEDIA_RESOLUTION_LOW"}}`

// snakeKey finds an object key with an underscore anywhere in v.
func snakeKey(v any) string {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, "_") {
				return k
			}
			if k := snakeKey(e); k != "" {
				return k
			}
		}
	case []any:
		for _, e := range v {
			if k := snakeKey(e); k != "" {
				return k
			}
		}
	}
	return ""
}

func encode(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRequestDecodesBothSpellingsAlike(t *testing.T) {
	t.Parallel()
	var camel, snake GenerateContentRequest
	if err := json.Unmarshal([]byte(camelRequest), &camel); err != nil {
		t.Fatalf("camelCase: %v", err)
	}
	if err := json.Unmarshal([]byte(snakeRequest), &snake); err != nil {
		t.Fatalf("snake_case: %v", err)
	}
	if diff := cmp.Diff(encode(t, camel), encode(t, snake)); diff != "" {
		t.Errorf("snake_case decodes differently (-camel +snake):\n%s", diff)
	}
	// Every field made it through: re-encoding the camelCase request gives the input back.
	var want, got any
	_ = json.Unmarshal([]byte(camelRequest), &want)
	_ = json.Unmarshal([]byte(encode(t, camel)), &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("re-encoded request lost or renamed fields (-input +encoded):\n%s", diff)
	}
	var enc any
	_ = json.Unmarshal([]byte(encode(t, snake)), &enc)
	if k := snakeKey(enc); k != "" {
		t.Errorf("encoding must use camelCase only; found key %q", k)
	}
}

func TestBothSpellingsOfOneFieldAreRejected(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, camel string
	}{
		{"system instruction", `{"contents":[],"systemInstruction":{"parts":[]},"system_instruction":{"parts":[]}}`, "systemInstruction"},
		{"generation config", `{"generationConfig":{},"generation_config":{}}`, "generationConfig"},
		{"output limit inside the config", `{"generationConfig":{"maxOutputTokens":1,"max_output_tokens":2}}`, "maxOutputTokens"},
		{"inline data of a part", `{"contents":[{"parts":[{"inlineData":{"data":""},"inline_data":{"data":""}}]}]}`, "inlineData"},
		{"mime type of a blob", `{"contents":[{"parts":[{"inlineData":{"mimeType":"a","mime_type":"b","data":""}}]}]}`, "mimeType"},
		{"function call", `{"contents":[{"parts":[{"functionCall":{"name":"a"},"function_call":{"name":"a"}}]}]}`, "functionCall"},
		{"thought signature", `{"contents":[{"parts":[{"text":"","thoughtSignature":"a","thought_signature":"a"}]}]}`, "thoughtSignature"},
		{"function declarations", `{"tools":[{"functionDeclarations":[],"function_declarations":[]}]}`, "functionDeclarations"},
		{"thinking budget", `{"generationConfig":{"thinkingConfig":{"thinkingBudget":1,"thinking_budget":1}}}`, "thinkingBudget"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r GenerateContentRequest
			err := json.Unmarshal([]byte(tc.body), &r)
			var both *ErrBothSpellings
			if !errors.As(err, &both) {
				t.Fatalf("err = %v, want ErrBothSpellings", err)
			}
			if both.Camel != tc.camel {
				t.Errorf("field = %q, want %q", both.Camel, tc.camel)
			}
		})
	}
}

func TestNullCountsAsAbsent(t *testing.T) {
	t.Parallel()
	var r GenerateContentRequest
	body := `{"systemInstruction":null,"system_instruction":{"parts":[{"text":"s"}]},"generationConfig":{"responseJsonSchema":null,"response_json_schema":{"type":"object"}}}`
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("a null spelling must not count as set: %v", err)
	}
	if r.SystemInstruction == nil || string(r.GenerationConfig.ResponseJSONSchema) != `{"type":"object"}` {
		t.Errorf("the non-null spelling was lost: %+v", r)
	}
}

func TestCountTokensForms(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		wantErr    bool
		wantGCR    bool
	}{
		{"contents alone", `{"contents":[{"parts":[{"text":"a"}]}]}`, false, false},
		{"generate content request", `{"generateContentRequest":{"model":"models/m","contents":[{"parts":[{"text":"a"}]}]}}`, false, true},
		{"snake generate content request", `{"generate_content_request":{"contents":[{"parts":[{"text":"a"}]}]}}`, false, true},
		{"both forms", `{"contents":[{"parts":[{"text":"a"}]}],"generateContentRequest":{"contents":[]}}`, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var c CountTokensRequest
			err := json.Unmarshal([]byte(tc.body), &c)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if !tc.wantErr && (c.GenerateContentRequest != nil) != tc.wantGCR {
				t.Errorf("generateContentRequest = %v, want set %v", c.GenerateContentRequest, tc.wantGCR)
			}
		})
	}
}

func TestResponseEncodesCamelCase(t *testing.T) {
	t.Parallel()
	r := GenerateContentResponse{
		Candidates: []Candidate{{Content: &Content{Role: RoleModel, Parts: []Part{
			TextPart(""), {FunctionCall: &FunctionCall{Name: "f", Args: json.RawMessage(`{}`)}, ThoughtSignature: "c2ln"},
		}}, FinishReason: FinishStop}},
		UsageMetadata: &UsageMetadata{PromptTokenCount: 5, CandidatesTokenCount: 3, ThoughtsTokenCount: 2, TotalTokenCount: 10},
		ModelVersion:  "m", ResponseID: "r",
	}
	want := `{"candidates":[{"content":{"role":"model","parts":[{"text":""},{"thoughtSignature":"c2ln","functionCall":{"name":"f","args":{}}}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":3,"thoughtsTokenCount":2,"totalTokenCount":10},"modelVersion":"m","responseId":"r"}`
	if diff := cmp.Diff(want, encode(t, r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestErrorBody(t *testing.T) {
	t.Parallel()
	got := encode(t, ErrorResponse{Error: NewStatus(429, "slow down")})
	want := `{"error":{"code":429,"message":"slow down","status":"RESOURCE_EXHAUSTED"}}`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
