package responses

import (
	"net/http/httptest"
	"os"
	"testing"
)

// FuzzDecode: no client body makes either route's decoder panic, and a body accepted names a
// model. Seeds: the OpenAI adapter's golden responses and the shapes of decode_test.go.
func FuzzDecode(f *testing.F) {
	for _, p := range []string{"../../core/provider/openai/testdata/responses_nonstream.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, false)
		}
	}
	f.Add([]byte(`{"model":"m","input":"hi","max_output_tokens":5}`), false)
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,AA=="}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"}],"tools":[{"type":"function","name":"f","parameters":{}}],"stream":true,"reasoning":{"effort":"low"},"text":{"format":{"type":"json_schema","name":"n","schema":{}}}}`), true)
	r := httptest.NewRequest("POST", "/v1/responses", nil)
	f.Fuzz(func(t *testing.T, body []byte, compact bool) {
		req, err := Protocol{Compact: compact}.Decode(r, body)
		if (req == nil) == (err == nil) {
			t.Fatalf("request %v and error %v", req, err)
		}
		if req != nil && req.GetModel() == "" {
			t.Fatalf("accepted without a model: %s", body)
		}
	})
}
