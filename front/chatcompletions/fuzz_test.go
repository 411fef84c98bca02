package chatcompletions

import (
	"net/http/httptest"
	"os"
	"testing"
)

// FuzzDecode: no client body makes the decoder panic, and a body it accepts names a model.
// Seeds: the translated chat request of the OpenAI adapter's golden files and the shapes of
// decode_test.go.
func FuzzDecode(f *testing.F) {
	for _, p := range []string{"../../core/provider/openai/testdata/request_translated.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5,"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add([]byte(`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"f"}},"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{}}}}`))
	r := httptest.NewRequest("POST", "/v1/chat/completions", nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := Protocol{}.Decode(r, body)
		if (req == nil) == (err == nil) {
			t.Fatalf("request %v and error %v", req, err)
		}
		if req != nil && req.GetModel() == "" {
			t.Fatalf("accepted without a model: %s", body)
		}
	})
}
