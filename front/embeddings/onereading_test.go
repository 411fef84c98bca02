package embeddings

import (
	"context"
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/provider/openai"
	"modelgateway/core/provider/providertest"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever body passes the gateway's checks (relay.ReadJSON, then decode), the
// model it authorized and the inputs it counted (the local count prices an answer without
// usage) are what the upstream reads from the bytes the OpenAI adapter sent it.
func FuzzOneReading(f *testing.F) {
	seeds := []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","input":["a","b"],"dimensions":8}`,
		`{"model":"m","Model":"x","input":"hi"}`,
		`{"model":"m","input":"hi","INPUT":["a","b","c"]}`,
		`{"model":"m","input":"hi","input":["a","b","c"]}`,
		`{"model":"m","inp\u0075t":["a","b"]}`,
	}
	strictjsontest.Fuzz(f, seeds, strictjsontest.Fields{Model: "model", Items: "input"}, func(body []byte) (strictjsontest.Decided, func(string), bool) {
		in, apiErr := decode(body)
		if apiErr != nil || in.req.GetTokenInput() {
			return strictjsontest.Decided{}, nil, false // token ids are counted upstream only
		}
		req := in.req
		d := strictjsontest.Decided{PublicModel: req.GetModel(), UpstreamModel: providertest.UpstreamModel, Items: len(req.GetTexts())}
		return d, func(url string) {
			_, _ = openai.Adapter{}.Embed(context.Background(), &provider.EmbedCall{
				Upstream: provider.Upstream{PublicModel: req.GetModel(), UpstreamModel: providertest.UpstreamModel, BaseURL: url}, Request: req})
		}, true
	})
}
