package front_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"modelgateway/core/gatewaytest"
)

// @google/genai 3.x calls Google's v1 API by default: the content-generation routes answer on
// /v1/models/{m}:{action} too, and GET /v1/models gives Google client libraries (which send
// x-goog-api-client) the content-generation list while everyone else keeps the chat list.
func TestContentGenerationOnTheV1Paths(t *testing.T) {
	g := gatewaytest.StartGen(t, gatewaytest.Options{})
	status, _, raw := g.Post("/v1/models/m-gemini:generateContent", map[string]string{"Authorization": "", "x-goog-api-key": g.Key},
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if status != 200 || !strings.Contains(string(raw), `"candidates"`) {
		t.Fatalf("v1 generateContent: %d %s", status, raw)
	}
	status, _, raw = g.Post("/v1/models/m-openai:streamGenerateContent?alt=sse", map[string]string{"x-goog-api-client": "google-genai-sdk/3.3.0 gl-node/v20.20.2"},
		`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if status != 200 || !strings.Contains(string(raw), `"candidates"`) || strings.Contains(string(raw), "[DONE]") {
		t.Fatalf("v1 streamGenerateContent for the SDK: %d %s", status, raw)
	}

	list := func(headers map[string]string) map[string]any {
		req, _ := http.NewRequest("GET", g.Base+"/v1/models", nil)
		req.Header.Set("x-goog-api-key", g.Key)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /v1/models %v: %d %v", headers, resp.StatusCode, err)
		}
		return out
	}
	if l := list(map[string]string{"x-goog-api-client": "google-genai-sdk/3.3.0"}); l["models"] == nil || l["data"] != nil {
		t.Errorf("a Google client library got %v", l)
	}
	if l := list(map[string]string{"Authorization": "Bearer " + g.Key}); l["data"] == nil || l["object"] != "list" {
		t.Errorf("another client got %v", l)
	}
}
