package embeddings

import (
	"context"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
	"modelgateway/core/wire/strictjson"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then decode), the
// model it authorized and the inputs it counted (the local count prices an answer without
// usage) are what the upstream reads from the bytes the OpenAI adapter sent it.
func FuzzOneReading(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":["a","b"],"dimensions":8}`,
		`{"model":"m","Model":"x","input":"hi"}`,
		`{"model":"m","input":"hi","INPUT":["a","b","c"]}`,
		`{"model":"m","input":"hi","input":["a","b","c"]}`,
		`{"model":"m","inp\u0075t":["a","b"]}`,
		`{"model":"m","input":[[1,2],[3]]}`,
	} {
		f.Add([]byte(s))
	}
	up := strictjsontest.NewUpstream(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return // refused before decode
		}
		in, apiErr := decode(body)
		if apiErr != nil {
			return
		}
		req := in.req
		sent := up.Received(func() {
			_, _ = openai.Adapter{}.Embed(context.Background(), &provider.EmbedCall{
				Upstream: provider.Upstream{PublicModel: req.GetModel(), UpstreamModel: "up-model", BaseURL: up.URL}, Request: req})
		})
		strictjsontest.Compare(t, body, sent, strictjsontest.Fields{Model: "model"}, strictjsontest.Decided{UpstreamModel: "up-model"})
		got, _ := strictjsontest.Read(sent)
		n := 1
		if items, ok := strictjsontest.Get(got, "input").([]any); ok {
			n = len(items)
		}
		if !req.GetTokenInput() && len(req.GetTexts()) != n {
			t.Errorf("%s: counted %d inputs, the upstream reads %d", body, len(req.GetTexts()), n)
		}
	})
}
