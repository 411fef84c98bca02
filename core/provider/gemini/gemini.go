// Package gemini is the adapter for provider kind "gemini": the content-generation protocol
// (Gemini API v1beta). A client speaking that protocol is passed through (its raw body, the
// upstream's raw chunks); any other client is translated to a GenerateContentRequest and the
// answer decoded into canonical events. Streams always use ?alt=sse upstream, whose end is
// simply the end of the body.
package gemini

import (
	"context"
	"net/http"
	"strings"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/apierror"
)

// Adapter speaks the content-generation protocol.
type Adapter struct{}

var _ provider.Adapter = Adapter{}

// HeaderAPIKey carries the provider credential (the header both official SDKs send).
const HeaderAPIKey = "x-goog-api-key"

// Generate dispatches on the client's protocol.
func (Adapter) Generate(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	switch call.Request.GetProtocol() {
	case corev1.Protocol_PROTOCOL_CONTENT_GENERATION:
		return passthrough(ctx, call) // passthrough.go
	case corev1.Protocol_PROTOCOL_RESPONSES_COMPACT:
		return nil, apierror.New(apierror.InvalidRequest, "responses compaction needs an OpenAI upstream; this model is served by a content-generation upstream")
	}
	return translated(ctx, call) // translate.go, decode.go
}

// CountTokens counts upstream with :countTokens.
func (Adapter) CountTokens(ctx context.Context, call *provider.Call) (int64, error) {
	return countTokens(ctx, call) // count.go
}

// url is the upstream URL of an action; the model may carry the "models/" resource prefix in
// the catalogue, which the path already has.
func url(call *provider.Call, action string) string {
	return strings.TrimRight(call.BaseURL, "/") + "/v1beta/models/" + bareModel(call.UpstreamModel) + ":" + action
}

func bareModel(m string) string { return strings.TrimPrefix(m, "models/") }

const (
	actionGenerate = "generateContent"
	actionStream   = "streamGenerateContent?alt=sse"
	actionCount    = "countTokens"
)

// send posts body to an action with the provider key; a non-2xx answer is a *provider.Error.
func send(ctx context.Context, call *provider.Call, action string, body []byte) (*http.Response, error) {
	req, err := provider.NewRequest(ctx, url(call, action), body)
	if err != nil {
		return nil, &provider.Error{Message: "building the upstream request failed", Err: err}
	}
	if call.APIKey != "" {
		req.Header.Set(HeaderAPIKey, call.APIKey)
	}
	if action == actionStream {
		req.Header.Set(provider.HeaderAccept, "text/event-stream")
	}
	return provider.Do(req, call.Timeouts)
}

func action(stream bool) string {
	if stream {
		return actionStream
	}
	return actionGenerate
}

func start(call *provider.Call, id string, passthrough bool, resp *http.Response) *corev1.Start {
	s := &corev1.Start{Id: id, Model: call.PublicModel, Created: time.Now().Unix(), Passthrough: passthrough}
	if passthrough {
		s.Status = int32(resp.StatusCode)
		s.ContentType = resp.Header.Get("Content-Type")
	}
	return s
}
