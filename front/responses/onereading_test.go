package responses

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
		`{"model":"m","input":"hi","max_output_tokens":3000}`,
		`{"model":"m","input":"hi","MAX_OUTPUT_TOKENS":16,"max_output_tokens":3000}`,
		`{"model":"m","input":"hi","Max_Output_Tokens":16}`,
		`{"model":"m","input":"hi","max_output_tokens":16,"max_output_tokens":3000}`,
		`{"model":"m","input":"hi","max_output_tokens":16,"max\u005foutput_tokens":3000}`,
		`{"model":"m","Model":"x","input":[{"role":"user","content":"hi"}],"stream":true,"STREAM":false}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}]}`,
	}
	fields := strictjsontest.Fields{Model: "model", Limit: []string{"max_output_tokens"}, Stream: "stream"}
	strictjsontest.Fuzz(f, seeds, fields, func(body []byte) (strictjsontest.Decided, func(string), bool) {
		r := httptest.NewRequest("POST", "/v1/responses", nil)
		req, apiErr := Protocol{}.Decode(r, body)
		if apiErr != nil {
			return strictjsontest.Decided{}, nil, false
		}
		req.RawBody = body
		return providertest.Decided(req), func(url string) { providertest.Generate(openai.Adapter{}, req, url) }, true
	})
}
