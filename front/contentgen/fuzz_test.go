package contentgen

import (
	"net/http/httptest"
	"os"
	"testing"
)

// FuzzDecode: no client body makes the generate, count or embed decoder panic. Seeds: the
// Gemini adapter's golden requests.
func FuzzDecode(f *testing.F) {
	for _, p := range []string{"request_full.json", "request_minimal.json", "request_reasoning_off.json", "embed_request_translated.json"} {
		if b, err := os.ReadFile("../../core/provider/gemini/testdata/" + p); err == nil {
			for action := range uint8(4) {
				f.Add(b, action)
			}
		}
	}
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5}}`), uint8(0))
	f.Add([]byte(`{"generateContentRequest":{"model":"models/m","contents":[{"parts":[{"text":"hi"}]}]}}`), uint8(1))
	f.Add([]byte(`{"requests":[{"model":"models/m","content":{"parts":[{"text":"a"}]}}]}`), uint8(3))
	paths := []string{":streamGenerateContent", ":countTokens", ":embedContent", ":batchEmbedContents"}
	f.Fuzz(func(t *testing.T, body []byte, action uint8) {
		path := "/v1beta/models/m" + paths[int(action)%len(paths)]
		r := httptest.NewRequest("POST", path, nil)
		switch action % 4 {
		case 0:
			req, err := Protocol{}.Decode(r, body)
			if (req == nil) == (err == nil) {
				t.Fatalf("request %v and error %v", req, err)
			}
		case 1:
			req, err := CountProtocol{}.Decode(r, body)
			if (req == nil) == (err == nil) {
				t.Fatalf("request %v and error %v", req, err)
			}
		default:
			req, err := decodeEmbed(path, body)
			if (req == nil) == (err == nil) {
				t.Fatalf("request %v and error %v", req, err)
			}
		}
	})
}
