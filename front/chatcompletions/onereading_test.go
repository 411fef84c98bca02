package chatcompletions

import (
	"context"
	"net/http/httptest"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
	"modelgateway/core/wire/strictjson"
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
	for _, s := range oneReadingSeeds {
		f.Add([]byte(s))
	}
	up := strictjsontest.NewUpstream(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return // refused before Decode
		}
		req, apiErr := Protocol{}.Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), body)
		if apiErr != nil {
			return
		}
		req.RawBody = body
		sent := up.Received(func() {
			_, _ = openai.Adapter{}.Generate(context.Background(), &provider.Call{
				Upstream: provider.Upstream{PublicModel: req.Model, UpstreamModel: "up-model", BaseURL: up.URL}, Request: req})
		})
		client, _ := strictjsontest.Read(body)
		if m, _ := strictjsontest.String(strictjsontest.Get(client, "model")); m != req.Model {
			t.Errorf("%s: authorized the model %q, the body names %q", body, req.Model, m)
		}
		strictjsontest.Compare(t, body, sent, strictjsontest.Fields{Model: "model", Limit: []string{"max_completion_tokens", "max_tokens"}, Stream: "stream", N: "n"},
			strictjsontest.Decided{UpstreamModel: "up-model", MaxOutput: req.MaxOutputTokens, Stream: req.Stream, N: req.N})
		got, _ := strictjsontest.Read(sent)
		if req.Stream && !strictjsontest.True(strictjsontest.Get(got, "stream_options", "include_usage")) {
			t.Errorf("%s: a stream whose upstream does not read include_usage: true reports no usage: %s", body, sent)
		}
	})
}
