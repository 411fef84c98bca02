package embeddings

import (
	"os"
	"testing"
)

// FuzzDecode: no client body makes the decoder panic. Seeds: the OpenAI adapter's golden
// embedding request.
func FuzzDecode(f *testing.F) {
	if b, err := os.ReadFile("../../core/provider/openai/testdata/embed_request_translated.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"model":"m","input":"hi"}`))
	f.Add([]byte(`{"model":"m","input":[[1,2],[3]],"encoding_format":"base64","dimensions":8}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		d, err := decode(body)
		if (d == nil) == (err == nil) {
			t.Fatalf("decoded %v and error %v", d, err)
		}
	})
}
