package completions

import (
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider/openai"
	"modelgateway/core/provider/providertest"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then Decode), the
// model, output limit and stream it priced and authorized are what the upstream reads from
// the bytes the openai adapter sent it (see front/chatcompletions for the chat seeds).
func FuzzOneReading(f *testing.F) {
	seeds := []string{
		`{"model":"m","prompt":"hi","max_tokens":3000}`,
		`{"model":"m","prompt":"hi","MAX_TOKENS":1,"max_tokens":3000}`,
		`{"model":"m","prompt":"hi","Max_Tokens":1}`,
		`{"model":"m","prompt":"hi","max_tokens":1,"max_tokens":3000}`,
		`{"model":"m","prompt":"hi","max_tokens":1,"max\u005ftokens":3000}`,
		`{"model":"m","Model":"x","prompt":"hi","n":2,"N":9}`,
		`{"model":"m","prompt":"hi","stream":false,"Stream":true}`,
	}
	fields := strictjsontest.Fields{Model: "model", Limit: []string{"max_tokens"}, Stream: "stream", N: "n"}
	strictjsontest.Fuzz(f, seeds, fields, func(body []byte) (strictjsontest.Decided, func(string), bool) {
		r := httptest.NewRequest("POST", "/v1/completions", nil)
		req, apiErr := Protocol{}.Decode(r, body)
		if apiErr != nil {
			return strictjsontest.Decided{}, nil, false
		}
		req.RawBody = body
		return providertest.Decided(req), func(url string) { providertest.Generate(openai.Adapter{}, req, url) }, true
	})
}
