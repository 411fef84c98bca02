package contentgen

import (
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider/gemini"
	"modelgateway/core/provider/providertest"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then Decode), the
// model, output limit and stream it priced and authorized are what the upstream reads from
// the bytes the gemini adapter sent it (see front/chatcompletions for the chat seeds).
func FuzzOneReading(f *testing.F) {
	seeds := []string{
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"MaxOutputTokens":1,"maxOutputTokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1,"max_output_tokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1},"generation_config":{"maxOutputTokens":3000}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":7}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"GenerationConfig":{"maxOutputTokens":1}}`,
		`{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":1,"maxOutputTokens":3000}}`,
		`{"model":"models/m","Model":"x","contents":[{"parts":[{"text":"hi"}]}]}`,
	}
	fields := strictjsontest.Fields{Limit: []string{"maxOutputTokens", "max_output_tokens"}, Parent: []string{"generationConfig", "generation_config"}}
	strictjsontest.Fuzz(f, seeds, fields, func(body []byte) (strictjsontest.Decided, func(string), bool) {
		r := httptest.NewRequest("POST", "/v1beta/models/m:streamGenerateContent", nil)
		req, apiErr := Protocol{}.Decode(r, body)
		if apiErr != nil {
			return strictjsontest.Decided{}, nil, false
		}
		req.RawBody = body
		return providertest.Decided(req), func(url string) { providertest.Generate(gemini.Adapter{}, req, url) }, true
	})
}
