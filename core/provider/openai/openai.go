// Package openai is the adapter for provider kind "openai": chat completions, legacy
// completions and responses upstreams. A client speaking one of those protocols is passed
// through to the same route; any other client is translated to chat completions, the route
// every OpenAI-compatible server has.
package openai

import (
	"context"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
)

// Adapter speaks the OpenAI protocols.
type Adapter struct{}

var _ provider.Adapter = Adapter{}

// Generate dispatches on the client's protocol.
func (Adapter) Generate(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	switch call.Request.GetProtocol() {
	case corev1.Protocol_PROTOCOL_RESPONSES, corev1.Protocol_PROTOCOL_RESPONSES_COMPACT:
		return responsesPassthrough(ctx, call) // responses.go
	case corev1.Protocol_PROTOCOL_COMPLETIONS:
		return completionsPassthrough(ctx, call) // completions.go
	case corev1.Protocol_PROTOCOL_CHAT_COMPLETIONS:
		return chatPassthrough(ctx, call) // chat.go
	default:
		return chatTranslated(ctx, call) // chat.go
	}
}

// CountTokens: the chat-completions protocol has no counting route; core counts locally.
func (Adapter) CountTokens(context.Context, *provider.Call) (int64, error) {
	return 0, provider.ErrCannotCount
}
