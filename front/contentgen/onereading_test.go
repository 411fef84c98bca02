package contentgen

import (
	"context"
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/gemini"
	"modelgateway/core/wire/strictjson"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then Decode), the
// model, output limit and stream it priced and authorized are what the upstream reads from
// the bytes the gemini adapter sent it (see front/chatcompletions for the chat seeds).
func FuzzOneReading(f *testing.F) {
	for _, s := range []string{
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"MaxOutputTokens":1,"maxOutputTokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1,"max_output_tokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1},"generation_config":{"maxOutputTokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":7}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"GenerationConfig":{"maxOutputTokens":1}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1,"maxOutputTokens":3000}}`,
		`{"model":"models/m","Model":"x","contents":[{"parts":[{"text":"hi"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	up := strictjsontest.NewUpstream(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return // refused before Decode
		}
		req, apiErr := Protocol{}.Decode(httptest.NewRequest("POST", "/v1beta/models/m:streamGenerateContent", nil), body)
		if apiErr != nil {
			return
		}
		req.RawBody = body
		sent := up.Received(func() {
			_, _ = gemini.Adapter{}.Generate(context.Background(), &provider.Call{
				Upstream: provider.Upstream{PublicModel: req.Model, UpstreamModel: "up-model", BaseURL: up.URL}, Request: req})
		})
		strictjsontest.Compare(t, body, sent, strictjsontest.Fields{Limit: []string{"maxOutputTokens", "max_output_tokens"}, Parent: []string{"generationConfig", "generation_config"}},
			strictjsontest.Decided{UpstreamModel: "up-model", MaxOutput: req.MaxOutputTokens, Stream: req.Stream, N: req.N})
	})
}
