package contentgen

import (
	"net/http/httptest"
	"testing"

	gw "modelgateway/core/wire/geminiwire"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// A body of the wrong shape is refused in the protocol's words: the member and the kind of
// value expected, never a Go type (issue 38).
func TestWrongTypesAreRefusedInTheProtocolsWords(t *testing.T) {
	t.Parallel()
	base := `{"contents":[{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"AAAA"}}]}],"systemInstruction":{"parts":[{"text":"s"}]},"generationConfig":{"maxOutputTokens":5,"thinkingConfig":{"thinkingBudget":10}},"tools":[{"functionDeclarations":[{"name":"f","parameters":{"type":"OBJECT"}}]}]}`
	var paths [][]string
	paths = append(paths, strictjsontest.Members(gw.GenerateContentRequest{})...)
	paths = append(paths, strictjsontest.Members(gw.Content{}, "contents", "0")...)
	paths = append(paths, strictjsontest.Members(gw.Part{}, "contents", "0", "parts", "0")...)
	paths = append(paths, strictjsontest.Members(gw.Blob{}, "contents", "0", "parts", "1", "inlineData")...)
	paths = append(paths, strictjsontest.Members(gw.GenerationConfig{}, "generationConfig")...)
	paths = append(paths, strictjsontest.Members(gw.ThinkingConfig{}, "generationConfig", "thinkingConfig")...)
	strictjsontest.CheckWrongTypes(t, base, paths, func(body []byte) string {
		r := httptest.NewRequest("POST", "/v1beta/models/m:generateContent", nil)
		r.Header.Set("anthropic-version", "2023-06-01")
		if _, err := (Protocol{}).Decode(r, body); err != nil {
			return err.Message
		}
		return ""
	})
}
