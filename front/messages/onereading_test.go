package messages

import (
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/providertest"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then Decode), the
// model, output limit and stream it priced and authorized are what the upstream reads from
// the bytes the anthropic adapter sent it (see front/chatcompletions for the chat seeds).
func FuzzOneReading(f *testing.F) {
	seeds := []string{
		`{"model":"m","max_tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","MAX_TOKENS":1,"max_tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1,"Max_Tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1,"max_tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1,"max\u005ftokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","Model":"x","max_tokens":5,"stream":true,"Stream":false,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a","type":"image"}]}]}`,
	}
	fields := strictjsontest.Fields{Model: "model", Limit: []string{"max_tokens"}, Stream: "stream"}
	strictjsontest.Fuzz(f, seeds, fields, func(body []byte) (strictjsontest.Decided, func(string), bool) {
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		r.Header.Set("anthropic-version", "2023-06-01")
		req, apiErr := Protocol{}.Decode(r, body)
		if apiErr != nil {
			return strictjsontest.Decided{}, nil, false
		}
		req.RawBody = body
		return providertest.Decided(req), func(url string) { providertest.Generate(anthropic.Adapter{}, req, url) }, true
	})
}
