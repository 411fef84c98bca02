package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

// responsesPassthrough sends a responses client's body to the responses route of an OpenAI
// upstream (or its compact route) with only the model rewritten, and hands back the
// upstream's own events. Per event it reads no more than the type, and the usage of the
// terminal event.
func responsesPassthrough(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	req := call.Request
	path := "/responses"
	if req.GetProtocol() == corev1.Protocol_PROTOCOL_RESPONSES_COMPACT {
		path = "/responses/compact"
	}
	body, err := provider.SetModel(req.GetRawBody(), call.UpstreamModel)
	if err != nil {
		return nil, err
	}
	if n := int(req.GetChainItems()); n > 0 {
		if body, err = replayChain(body, n); err != nil {
			return nil, err
		}
	}
	hreq, err := provider.NewRequest(ctx, strings.TrimRight(call.BaseURL, "/")+path, body)
	if err != nil {
		return nil, &provider.Error{Message: "building the upstream request failed", Err: err}
	}
	if call.APIKey != "" {
		provider.SetBearer(hreq.Header, call.APIKey)
	}
	provider.SetAccept(hreq.Header, req.GetStream())
	resp, err := provider.Do(hreq, call.Timeouts)
	if err != nil {
		return nil, err
	}
	start := &corev1.Start{Model: call.PublicModel, Created: time.Now().Unix(), Passthrough: true,
		Status: http.StatusOK, ContentType: resp.Header.Get(provider.HeaderContentType)}
	if req.GetStream() {
		return provider.NewSSEStream(resp.Body, start, &responsesDecoder{upstream: call.UpstreamModel, public: call.PublicModel}), nil
	}
	raw, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	raw = provider.RenameAnswerModel(raw, call.UpstreamModel, call.PublicModel)
	usage := metering.FromOpenAIResponses(json.RawMessage(gjson.GetBytes(raw, "usage").Raw))
	return provider.NewStaticStream(start, []*corev1.GenerateEvent{provider.NativeEvent("", raw)}, usage), nil
}

// responsesDecoder forwards every upstream event as Native and ends at the first terminal
// event: response.completed, response.incomplete, response.failed, or a top-level error.
type responsesDecoder struct {
	upstream, public string
	usage            metering.Usage
	one              provider.Single
	chunks           provider.Chunks  // the events renamed to the public model
	natives          provider.Natives // their events
}

var _ provider.Decoder = (*responsesDecoder)(nil)

// Decode implements provider.Decoder.
func (d *responsesDecoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	name := ev.Name
	if name == "" {
		// Servers that leave out event: lines still put the type in the data; clients of this
		// route expect the name line, so it is filled in.
		if len(ev.Data) > 0 && ev.Data[0] == '[' {
			return nil, false, nil // a chat-style [DONE] marker is not a responses event
		}
		name = gjson.GetBytes(ev.Data, "type").String()
	}
	out := d.one.Of(d.natives.Event(name, d.chunks.PublicModel(ev.Data, d.upstream, d.public)))
	switch name {
	case "response.completed", "response.incomplete":
		d.usage = metering.FromOpenAIResponses(json.RawMessage(gjson.GetBytes(ev.Data, "response.usage").Raw))
		return out, true, nil
	case "response.failed", "error":
		// The failure reaches the client in the upstream's own words; whatever usage it
		// reports is not charged.
		d.usage = metering.Unreliable("the upstream reported " + name)
		return out, true, nil
	}
	return out, false, nil
}

// End implements provider.Decoder: a responses stream always ends with a terminal event.
func (d *responsesDecoder) End() ([]*corev1.GenerateEvent, error) {
	return nil, &provider.Error{Message: "the upstream stream ended before its terminal event"}
}

// Usage implements provider.Decoder.
func (d *responsesDecoder) Usage() metering.Usage { return d.usage }

// replayChain prepares the first n input items, a stored conversation the front expanded
// (front/responses), for an upstream that has never seen them: their ids are the gateway's
// or another upstream's, which this upstream would look up and not find, so they go; and
// reasoning items go too, since one made elsewhere (a thinking signature, the gateway's own
// markers) is nothing this upstream can read. What it answers no longer depends on them: the
// messages, calls and call outputs around them are all there.
func replayChain(body []byte, n int) ([]byte, error) {
	input := gjson.GetBytes(body, "input")
	if !input.IsArray() {
		return body, nil
	}
	items := input.Array()
	out := make([]byte, 0, len(input.Raw))
	out = append(out, '[')
	for i, it := range items {
		raw := []byte(it.Raw)
		if i < n {
			if it.Get("type").String() == "reasoning" {
				continue
			}
			if it.Get("id").Exists() {
				stripped, err := sjson.DeleteBytes(raw, "id")
				if err != nil {
					return nil, &provider.Error{Message: "preparing the stored conversation failed", Err: err}
				}
				raw = stripped
			}
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, raw...)
	}
	out = append(out, ']')
	b, err := sjson.SetRawBytes(body, "input", out)
	if err != nil {
		return nil, &provider.Error{Message: "preparing the stored conversation failed", Err: err}
	}
	return b, nil
}
