package media

import (
	"github.com/tidwall/gjson"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
)

// defaultModerationModel is what /v1/moderations uses when the client names no model
// (other-endpoints.md).
const defaultModerationModel = "omni-moderation-latest"

// jsonHead checks the few fields core decides on and sends the body as it is; the rest of
// the body is the upstream's business. body has passed strictjson.Check (relay.ReadJSON):
// one valid value, no name twice, so that gjson, which matches keys exactly as the upstreams
// do, reads a 32 MiB body without decoding it and without a check of its own.
func jsonHead(family string, body []byte) (*corev1.ForwardHead, *apierror.Error) {
	if !gjson.ParseBytes(body).IsObject() {
		return nil, invalid("the body must be a JSON object")
	}
	f := gjson.GetManyBytes(body, "model", "stream", "stream_format", "user")
	model, stream, streamFormat, user := f[0], f[1], f[2], f[3]
	head := &corev1.ForwardHead{EndpointFamily: family, Body: body, BodySize: int64(len(body))}
	switch {
	case model.Type == gjson.String && model.Str != "":
		head.Model = model.Str
	case model.Exists() && model.Type != gjson.Null && model.Type != gjson.String:
		return nil, invalid("model must be a string")
	case family == "moderations":
		head.Model = defaultModerationModel
	default:
		return nil, invalid("model is required")
	}
	// Core refuses streaming on these routes (spec 4.3, 4.4); speech asks for it with SSE
	// events instead of the stream flag.
	head.Stream = stream.Type == gjson.True ||
		family == "audio.speech" && streamFormat.Type == gjson.String && streamFormat.Str == "sse"
	if user.Exists() && user.Type != gjson.Null {
		head.Parameters = []string{"user"}
	}
	return head, nil
}
