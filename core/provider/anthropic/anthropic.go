// Package anthropic is the adapter for provider kind "anthropic": the messages protocol.
// A messages client is passed through (its body with only the model rewritten, the upstream's
// events copied back); every other client is translated to a messages request and the
// answer decoded into canonical events (translation.md 5.1).
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
	"modelgateway/core/wire/apierror"
	mw "modelgateway/core/wire/messageswire"
)

// Adapter speaks the messages protocol.
type Adapter struct{}

var _ provider.Adapter = Adapter{}

// Upstream paths, appended to the base URL the official SDK takes (no /v1 suffix).
const (
	pathMessages = "/v1/messages"
	pathCount    = "/v1/messages/count_tokens"
)

// Headers the upstream needs. The version header is required on every request whatever the
// client sent; beta flags are forwarded only in passthrough, where the body's beta fields are.
const (
	headerAPIKey  = "X-Api-Key" // canonical, as Header.Set would store them
	headerVersion = "Anthropic-Version"
	headerBeta    = "anthropic-beta"
)

// valueVersion is the version header's value, shared by every request (see provider's
// valueJSON for why sharing is safe).
var valueVersion = []string{mw.Version}

// Generate implements provider.Adapter.
func (Adapter) Generate(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	switch call.Request.GetProtocol() {
	case corev1.Protocol_PROTOCOL_MESSAGES:
		return passthrough(ctx, call) // passthrough.go
	case corev1.Protocol_PROTOCOL_RESPONSES_COMPACT:
		return nil, apierror.New(apierror.InvalidRequest, "the model's upstream cannot serve /v1/responses/compact: compaction needs an OpenAI upstream")
	}
	return translated(ctx, call) // translated.go
}

// CountTokens implements provider.Adapter with the upstream's own counting route.
func (Adapter) CountTokens(ctx context.Context, call *provider.Call) (int64, error) {
	req := call.Request
	same := req.GetProtocol() == corev1.Protocol_PROTOCOL_MESSAGES
	var body []byte
	var err error
	if same {
		body, err = provider.SetModel(req.GetRawBody(), call.UpstreamModel)
	} else {
		body, err = countBody(call) // request.go
	}
	if err != nil {
		return 0, err
	}
	resp, err := post(ctx, call, pathCount, body, same, false)
	if err != nil {
		return 0, err
	}
	raw, err := provider.ReadAll(resp.Body, 1<<20)
	if err != nil {
		return 0, err
	}
	var out struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.InputTokens == nil {
		return 0, &provider.Error{Message: "the upstream's token count is not readable", Retryable: true, Err: err}
	}
	return *out.InputTokens, nil
}

// post sends one request with the gateway's own headers and the upstream credential.
func post(ctx context.Context, call *provider.Call, path string, body []byte, same, stream bool) (*http.Response, error) {
	hr, err := provider.NewRequest(ctx, strings.TrimRight(call.BaseURL, "/")+path, body)
	if err != nil {
		return nil, &provider.Error{Message: "the upstream request could not be built", Err: err}
	}
	if call.APIKey != "" {
		provider.SetKey(hr.Header, headerAPIKey, call.APIKey)
	}
	hr.Header[headerVersion] = valueVersion
	if same {
		if beta := call.Request.GetForwardHeaders()[headerBeta]; beta != "" {
			hr.Header.Set(headerBeta, beta)
		}
	}
	provider.SetAccept(hr.Header, stream)
	return provider.Do(hr, call.Timeouts)
}

// streamError turns an `error` event (or a 200 body that is an error object) into the
// failure its type stands for: overloaded_error is a 529, rate_limit_error a 429, both
// retryable while nothing has reached the client.
func streamError(data []byte) *provider.Error {
	var e mw.ErrorResponse
	_ = json.Unmarshal(data, &e)
	return provider.StatusError(mw.ErrorStatus(e.Error.Type), data)
}

// primed is a stream whose first upstream event has been read before Generate returns, so
// that an upstream that fails at once (an `error` event right after the 200) is still a
// failure core may retry on another route, and the Start event carries the upstream's id.
type primed struct {
	provider.Stream
	head  []*corev1.GenerateEvent
	first [2]*corev1.GenerateEvent // head's room: the two events read ahead, in the one allocation
}

// prime reads s's first events into p, a new primed, and returns p; p lives in memory the
// caller holds (a stream's one allocation).
func (p *primed) prime(s provider.Stream) (provider.Stream, error) {
	start, err := s.Next()
	if err != nil {
		s.Close()
		return nil, err
	}
	p.Stream = s
	p.first[0] = start
	p.head = p.first[:1]
	next, err := s.Next()
	switch {
	case errors.Is(err, io.EOF):
		return p, nil
	case err != nil:
		s.Close()
		return nil, err
	}
	p.first[1] = next
	p.head = p.first[:2]
	return p, nil
}

func (p *primed) Next() (*corev1.GenerateEvent, error) {
	if len(p.head) > 0 {
		ev := p.head[0]
		p.head[0] = nil // returned: the stream's consumer owns it now
		p.head = p.head[1:]
		return ev, nil
	}
	return p.Stream.Next()
}
