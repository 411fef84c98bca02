package completions

import (
	"net/http/httptest"
	"testing"
)

// FuzzDecode: no client body makes the decoder panic, and a body it accepts names a model.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"model":"m","prompt":"hi","max_tokens":5}`))
	f.Add([]byte(`{"model":"m","prompt":["a","b"]}`))
	f.Add([]byte(`{"model":"m","prompt":[1,2,3],"stream":true,"logprobs":2,"echo":true,"suffix":"x"}`))
	r := httptest.NewRequest("POST", "/v1/completions", nil)
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
