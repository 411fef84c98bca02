package chatcompletions

import (
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider/openai"
	"modelgateway/core/provider/providertest"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// oneReadingSeeds are chat bodies a hostile key holder would try: names repeated (as they
// are, escaped, nested), spelled in another case, and the policy fields in every spelling.
var oneReadingSeeds = []string{
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":3000}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"MAX_TOKENS":1,"max_tokens":3000}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"MAX_TOKENS":1}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"Max_Completion_Tokens":1,"max_tokens":3000}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5,"max_tokens":3000}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"max_tokens":3000}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"max\u005ftokens":3000}`,
	`{"model":"m","Model":"other","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","model":"other","messages":[{"role":"user","content":"hi"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"stream_options":{"include_usage":false}}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":false}}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"STREAM":false}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":false,"Stream":true}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":1,"N":8}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":8}`,
	`{"model":"m","messages":[{"role":"user","content":"hi","content":"x"}]}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1e3}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":null,"max_completion_tokens":7}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{},"A":{}}}}}]}`,
}

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then Decode), the
// model, output limit, stream, usage report and n it priced and authorized are what the
// upstream reads from the bytes the OpenAI adapter sent it.
func FuzzOneReading(f *testing.F) {
	fields := strictjsontest.Fields{Model: "model", Limit: []string{"max_completion_tokens", "max_tokens"}, Stream: "stream", N: "n",
		Usage: []string{"stream_options", "include_usage"}}
	strictjsontest.Fuzz(f, oneReadingSeeds, fields, func(body []byte) (strictjsontest.Decided, func(string), bool) {
		req, apiErr := Protocol{}.Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), body)
		if apiErr != nil {
			return strictjsontest.Decided{}, nil, false
		}
		req.RawBody = body
		return providertest.Decided(req), func(url string) { providertest.Generate(openai.Adapter{}, req, url) }, true
	})
}
