package responses

import (
	"context"
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
	"modelgateway/core/wire/strictjson"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then Decode), the
// model, output limit and stream it priced and authorized are what the upstream reads from
// the bytes the openai adapter sent it (see front/chatcompletions for the chat seeds).
func FuzzOneReading(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi","max_output_tokens":3000}`,
		`{"model":"m","input":"hi","MAX_OUTPUT_TOKENS":16,"max_output_tokens":3000}`,
		`{"model":"m","input":"hi","Max_Output_Tokens":16}`,
		`{"model":"m","input":"hi","max_output_tokens":16,"max_output_tokens":3000}`,
		`{"model":"m","input":"hi","max_output_tokens":16,"max\u005foutput_tokens":3000}`,
		`{"model":"m","Model":"x","input":[{"role":"user","content":"hi"}],"stream":true,"STREAM":false}`,
		`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"a","text":"b"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	up := strictjsontest.NewUpstream(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return // refused before Decode
		}
		req, apiErr := Protocol{}.Decode(httptest.NewRequest("POST", "/v1/responses", nil), body)
		if apiErr != nil {
			return
		}
		req.RawBody = body
		sent := up.Received(func() {
			_, _ = openai.Adapter{}.Generate(context.Background(), &provider.Call{
				Upstream: provider.Upstream{PublicModel: req.Model, UpstreamModel: "up-model", BaseURL: up.URL}, Request: req})
		})
		strictjsontest.Compare(t, body, sent, strictjsontest.Fields{Model: "model", Limit: []string{"max_output_tokens"}, Stream: "stream"},
			strictjsontest.Decided{UpstreamModel: "up-model", MaxOutput: req.MaxOutputTokens, Stream: req.Stream, N: req.N})
	})
}
