package anthropic

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	mw "modelgateway/core/wire/messageswire"
	"modelgateway/core/wire/sse"
)

// passthrough sends the client's own body with the model rewritten and copies the answer
// back: every SSE event as a Native event, or the whole body as one.
func passthrough(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	req := call.Request
	body, err := provider.SetModel(req.GetRawBody(), call.UpstreamModel)
	if err != nil {
		return nil, err
	}
	resp, err := post(ctx, call, pathMessages, body, true, req.GetStream())
	if err != nil {
		return nil, err
	}
	if req.GetStream() {
		// The Start event, the decoder, the stream and the read-ahead in one allocation.
		x := &struct {
			start  corev1.Start
			dec    passthroughDecoder
			stream provider.SSEStream
			primed primed
		}{}
		x.start = corev1.Start{
			Model: call.PublicModel, Created: time.Now().Unix(), Passthrough: true,
			Status: int32(resp.StatusCode), ContentType: resp.Header.Get(provider.HeaderContentType),
		}
		x.dec = passthroughDecoder{upstream: call.UpstreamModel, public: call.PublicModel}
		x.stream.Init(resp.Body, &x.start, &x.dec)
		return x.primed.prime(&x.stream)
	}
	start := &corev1.Start{
		Model: call.PublicModel, Created: time.Now().Unix(), Passthrough: true,
		Status: int32(resp.StatusCode), ContentType: resp.Header.Get(provider.HeaderContentType),
	}
	raw, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	if gjson.GetBytes(raw, "type").String() == mw.EventError {
		return nil, streamError(raw)
	}
	raw = provider.RenameAnswerModel(raw, call.UpstreamModel, call.PublicModel)
	start.Id = gjson.GetBytes(raw, "id").String()
	u := metering.FromAnthropic(json.RawMessage(gjson.GetBytes(raw, "usage").Raw))
	native := provider.NativeEvent("", raw)
	return provider.NewStaticStream(start, []*corev1.GenerateEvent{native}, u), nil
}

// passthroughDecoder forwards events untouched but for the model name (only message_start
// carries one) and reads just the usage objects: this is the hot path.
type passthroughDecoder struct {
	upstream, public string
	usage            metering.Anthropic
	events           int
	one              provider.Single
	natives          provider.Natives
}

func (d *passthroughDecoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	d.events++
	name := ev.Name
	if name == "" {
		name = gjson.GetBytes(ev.Data, "type").String()
	}
	data := ev.Data
	switch name {
	case mw.EventError:
		return nil, false, streamError(ev.Data)
	case mw.EventMessageStart:
		d.merge(gjson.GetBytes(data, "message.usage").Raw)
		data = provider.PublicModel(data, d.upstream, d.public)
	case mw.EventMessageDelta:
		d.merge(gjson.GetBytes(data, "usage").Raw)
	case mw.EventMessageStop:
		return d.one.Of(d.natives.Event(name, data)), true, nil
	}
	return d.one.Of(d.natives.Event(name, data)), false, nil
}

// merge overlays a usage object: message_delta repeats cumulative counts (overwrite, never
// add).
func (d *passthroughDecoder) merge(raw string) {
	if raw == "" {
		return
	}
	var u metering.Anthropic
	if json.Unmarshal([]byte(raw), &u) == nil {
		d.usage.Merge(u)
	}
}

func (d *passthroughDecoder) End() ([]*corev1.GenerateEvent, error) {
	return nil, cutError(d.events)
}

func (d *passthroughDecoder) Usage() metering.Usage { return d.usage.Usage() }

// cutError is a stream that ended before message_stop. Before any event another route may
// still serve the request.
func cutError(events int) *provider.Error {
	return &provider.Error{Message: "the upstream stream ended before message_stop", Retryable: events == 0}
}
