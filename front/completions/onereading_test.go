package completions

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
		`{"model":"m","prompt":"hi","max_tokens":3000}`,
		`{"model":"m","prompt":"hi","MAX_TOKENS":1,"max_tokens":3000}`,
		`{"model":"m","prompt":"hi","Max_Tokens":1}`,
		`{"model":"m","prompt":"hi","max_tokens":1,"max_tokens":3000}`,
		`{"model":"m","prompt":"hi","max_tokens":1,"max\u005ftokens":3000}`,
		`{"model":"m","Model":"x","prompt":"hi","n":2,"N":9}`,
		`{"model":"m","prompt":"hi","stream":false,"Stream":true}`,
	} {
		f.Add([]byte(s))
	}
	up := strictjsontest.NewUpstream(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return // refused before Decode
		}
		req, apiErr := Protocol{}.Decode(httptest.NewRequest("POST", "/v1/completions", nil), body)
		if apiErr != nil {
			return
		}
		req.RawBody = body
		sent := up.Received(func() {
			_, _ = openai.Adapter{}.Generate(context.Background(), &provider.Call{
				Upstream: provider.Upstream{PublicModel: req.Model, UpstreamModel: "up-model", BaseURL: up.URL}, Request: req})
		})
		strictjsontest.Compare(t, body, sent, strictjsontest.Fields{Model: "model", Limit: []string{"max_tokens"}, Stream: "stream", N: "n"},
			strictjsontest.Decided{UpstreamModel: "up-model", MaxOutput: req.MaxOutputTokens, Stream: req.Stream, N: req.N})
	})
}
