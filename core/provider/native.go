package provider

import (
	"context"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// Native serves provider kind "simulator": one server that speaks all three upstream
// protocols, always addressed in the client's own protocol, so every request is a passthrough.
// The provider's base_url is the server's root (a trailing "/v1" is tolerated); without one,
// DefaultBase (the gateway's built-in simulator) is used.
type Native struct {
	OpenAI, Anthropic, Gemini Adapter
	DefaultBase               string
}

func (n Native) pick(call *Call) (Adapter, *Call) {
	root := strings.TrimSuffix(strings.TrimRight(call.BaseURL, "/"), "/v1")
	if root == "" {
		root = n.DefaultBase
	}
	c := *call
	switch call.Request.GetProtocol() {
	case corev1.Protocol_PROTOCOL_MESSAGES:
		c.BaseURL = root
		return n.Anthropic, &c
	case corev1.Protocol_PROTOCOL_CONTENT_GENERATION:
		c.BaseURL = root
		return n.Gemini, &c
	default:
		c.BaseURL = root + "/v1"
		return n.OpenAI, &c
	}
}

// Generate implements Adapter.
func (n Native) Generate(ctx context.Context, call *Call) (Stream, error) {
	a, c := n.pick(call)
	return a.Generate(ctx, c)
}

// CountTokens implements Adapter.
func (n Native) CountTokens(ctx context.Context, call *Call) (int64, error) {
	a, c := n.pick(call)
	return a.CountTokens(ctx, c)
}
