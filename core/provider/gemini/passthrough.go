package gemini

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/metering"
	"modelgateway/core/provider"
	"modelgateway/core/wire/sse"
)

// passthrough sends the client's own body and returns the upstream's own chunks. Per chunk it
// only looks for an error and for usageMetadata; nothing is re-encoded.
func passthrough(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	body, err := withoutModel(call.Request.GetRawBody())
	if err != nil {
		return nil, err
	}
	stream := call.Request.GetStream()
	resp, err := send(ctx, call, action(stream), body)
	if err != nil {
		return nil, err
	}
	st := start(call, "", true, resp)
	if stream {
		return provider.NewSSEStream(resp.Body, st, &nativeDecoder{upstream: call.UpstreamModel, public: call.PublicModel}), nil
	}
	raw, err := provider.ReadAll(resp.Body, provider.MaxAnswer)
	if err != nil {
		return nil, err
	}
	if err := chunkError(raw); err != nil {
		return nil, err
	}
	native := provider.NativeEvent("", publicModelVersion(raw, call.UpstreamModel, call.PublicModel))
	return provider.NewStaticStream(st, []*corev1.GenerateEvent{native}, usageOf(usageRaw(raw))), nil
}

// withoutModel drops the body's optional model: the URL names the upstream model, and a
// public name left in the body could contradict it.
func withoutModel(body []byte) ([]byte, error) {
	if !gjson.GetBytes(body, "model").Exists() {
		return body, nil
	}
	out, err := sjson.DeleteBytes(body, "model")
	if err != nil {
		return nil, &provider.Error{Message: "the request body is not a JSON object", Err: err}
	}
	return out, nil
}

// nativeDecoder passes every chunk through. The stream has no terminal event: its end is
// the end of the body.
type nativeDecoder struct {
	upstream, public string
	usage            []byte
	chunks           int
	one              provider.Single
	natives          provider.Natives
}

// Decode implements provider.Decoder.
func (d *nativeDecoder) Decode(ev sse.Event) ([]*corev1.GenerateEvent, bool, error) {
	if isDone(ev.Data) {
		return nil, true, nil // some compatible servers end with the marker anyway
	}
	if err := chunkError(ev.Data); err != nil {
		return nil, false, err
	}
	if u := usageRaw(ev.Data); u != nil {
		d.usage = u // cumulative: the last one wins
	}
	d.chunks++
	return d.one.Of(d.natives.Event("", publicModelVersion(ev.Data, d.upstream, d.public))), false, nil
}

// End implements provider.Decoder: the normal end of a stream, unless it had no chunk at
// all (an upstream that answered 200 with something other than SSE).
func (d *nativeDecoder) End() ([]*corev1.GenerateEvent, error) {
	if d.chunks == 0 {
		return nil, &provider.Error{Message: "the upstream stream ended without a response"}
	}
	return nil, nil
}

// Usage implements provider.Decoder.
func (d *nativeDecoder) Usage() metering.Usage { return usageOf(d.usage) }

func isDone(data []byte) bool { return string(bytes.TrimSpace(data)) == "[DONE]" }

// usageRaw is the chunk's usageMetadata, sliced from the chunk without a copy.
func usageRaw(data []byte) []byte {
	r := gjson.GetBytes(data, "usageMetadata")
	switch {
	case !r.Exists():
		return nil
	case r.Index > 0:
		return data[r.Index : r.Index+len(r.Raw)]
	}
	return []byte(r.Raw)
}

func usageOf(raw []byte) metering.Usage { return metering.FromGemini(json.RawMessage(raw)) }

var errorKey = []byte(`"error"`)

// chunkError turns a {"error":{code,message,status}} chunk or body into a *provider.Error.
// The byte search keeps the common case (no error) to one pass of memchr speed.
func chunkError(data []byte) error {
	if !bytes.Contains(data, errorKey) {
		return nil
	}
	e := gjson.GetBytes(data, "error")
	if !e.IsObject() {
		return nil
	}
	code := int(e.Get("code").Int())
	if code == 0 {
		code = 500
	}
	return provider.StatusError(code, data)
}

// publicModelVersion shows the client the model it asked for where the chunk names the
// upstream model exactly (Google writes `"modelVersion": "x"`, with a space); a dated
// version string is left alone.
func publicModelVersion(chunk []byte, upstream, public string) []byte {
	if upstream == public || upstream == "" {
		return chunk
	}
	i := bytes.Index(chunk, modelVersionKey)
	if i < 0 {
		return chunk
	}
	j := i + len(modelVersionKey)
	j += len(chunk[j:]) - len(bytes.TrimLeft(chunk[j:], " \t\r\n"))
	if j >= len(chunk) || chunk[j] != ':' {
		return chunk
	}
	j++
	j += len(chunk[j:]) - len(bytes.TrimLeft(chunk[j:], " \t\r\n"))
	old := `"` + upstream + `"`
	if !bytes.HasPrefix(chunk[j:], []byte(old)) {
		return chunk
	}
	out := make([]byte, 0, len(chunk)+len(public)-len(upstream))
	out = append(out, chunk[:j]...)
	out = append(out, '"')
	out = append(out, public...)
	out = append(out, '"')
	return append(out, chunk[j+len(old):]...)
}

var modelVersionKey = []byte(`"modelVersion"`)
