package messages

import (
	"context"
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/wire/strictjson"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then Decode), the
// model, output limit and stream it priced and authorized are what the upstream reads from
// the bytes the anthropic adapter sent it (see front/chatcompletions for the chat seeds).
func FuzzOneReading(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","MAX_TOKENS":1,"max_tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1,"Max_Tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1,"max_tokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":1,"max\u005ftokens":3000,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","Model":"x","max_tokens":5,"stream":true,"Stream":false,"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"a","type":"image"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	up := strictjsontest.NewUpstream(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return // refused before Decode
		}
		r := httptest.NewRequest("POST", "/v1/messages", nil)
		r.Header.Set("anthropic-version", "2023-06-01")
		req, apiErr := Protocol{}.Decode(r, body)
		if apiErr != nil {
			return
		}
		req.RawBody = body
		sent := up.Received(func() {
			_, _ = anthropic.Adapter{}.Generate(context.Background(), &provider.Call{
				Upstream: provider.Upstream{PublicModel: req.Model, UpstreamModel: "up-model", BaseURL: up.URL}, Request: req})
		})
		strictjsontest.Compare(t, body, sent, strictjsontest.Fields{Model: "model", Limit: []string{"max_tokens"}, Stream: "stream"},
			strictjsontest.Decided{UpstreamModel: "up-model", MaxOutput: req.MaxOutputTokens, Stream: req.Stream, N: req.N})
	})
}
