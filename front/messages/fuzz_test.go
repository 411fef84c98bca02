package messages

import (
	"net/http/httptest"
	"os"
	"testing"
)

// FuzzDecode: no client body makes the generation or the counting decoder panic, and a body
// accepted names a model. Seeds: the Anthropic adapter's golden request and decode_test.go's
// shapes.
func FuzzDecode(f *testing.F) {
	for _, p := range []string{"../../core/provider/anthropic/testdata/request_translated.json", "../../core/provider/anthropic/testdata/message.json"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b, false)
		}
	}
	f.Add([]byte(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`), true)
	f.Add([]byte(`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"tool_result","tool_use_id":"t","content":"r"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"x","signature":"s"},{"type":"tool_use","id":"t","name":"f","input":{}}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"},"thinking":{"type":"enabled","budget_tokens":1024},"stream":true}`), false)
	f.Fuzz(func(t *testing.T, body []byte, count bool) {
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		r.Header.Set("anthropic-version", "2023-06-01")
		var err error
		req, apiErr := Protocol{}.Decode(r, body)
		if count {
			req, apiErr = CountProtocol{}.Decode(r, body)
		}
		if apiErr != nil {
			err = apiErr
		}
		if (req == nil) == (err == nil) {
			t.Fatalf("request %v and error %v", req, err)
		}
		if req != nil && req.GetModel() == "" {
			t.Fatalf("accepted without a model: %s", body)
		}
	})
}
