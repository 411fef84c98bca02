package media

import (
	"testing"

	"modelgateway/core/provider"
	"modelgateway/core/wire/strictjson"
	"modelgateway/core/wire/strictjson/strictjsontest"
)

// FuzzOneReading: whatever JSON media body passes the gateway's checks (relay.ReadJSON, then
// jsonHead), the model core authorizes and the stream flag it refuses are what the upstream
// reads from the body core sends (the client's, with the model rewritten by provider.SetModel
// as core/rpc's Forward does).
func FuzzOneReading(f *testing.F) {
	for _, s := range []string{
		`{"model":"img","prompt":"a cat","size":"1024x1024"}`,
		`{"model":"img","Model":"x","prompt":"a cat"}`,
		`{"model":"img","model":"x","prompt":"a cat"}`,
		`{"model":"img","mod\u0065l":"x","prompt":"a cat"}`,
		`{"model":"tts","input":"hi","voice":"alloy","stream":false,"Stream":true}`,
		`{"model":"tts","input":"hi","voice":"alloy","stream_format":"sse"}`,
		`{"input":"hi"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if strictjson.Check(body) != nil {
			return // refused before jsonHead
		}
		for _, family := range []string{"images.generations", "audio.speech", "moderations"} {
			head, apiErr := jsonHead(family, body)
			if apiErr != nil {
				continue
			}
			sent, err := provider.SetModel(head.GetBody(), "up-model")
			if err != nil {
				t.Fatalf("%s: a body jsonHead accepted cannot carry the model: %v", body, err)
			}
			client, _ := strictjsontest.Read(body)
			stream := strictjsontest.True(strictjsontest.Get(client, "stream"))
			if family == "audio.speech" {
				s, _ := strictjsontest.String(strictjsontest.Get(client, "stream_format"))
				stream = stream || s == "sse"
			}
			// An empty or absent model on moderations is the default, sent by name: Compare
			// checks the body's model only where it names one.
			strictjsontest.Compare(t, body, sent, strictjsontest.Fields{Model: "model"},
				strictjsontest.Decided{PublicModel: head.GetModel(), UpstreamModel: "up-model"})
			if stream != head.GetStream() {
				t.Errorf("%s on %s: refused a stream %v, the upstream reads one %v", body, family, head.GetStream(), stream)
			}
		}
	})
}
