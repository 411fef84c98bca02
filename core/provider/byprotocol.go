package provider

import (
	"context"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// ByClientProtocol serves provider kind "simulator": one server that speaks all three upstream
// protocols, always addressed in the client's own protocol, so every request goes to the
// adapter of that protocol and is a passthrough.
// The provider's base_url is the server's root (a trailing "/v1" is tolerated); without one,
// DefaultBase (the gateway's built-in simulator) is used.
type ByClientProtocol struct {
	OpenAI, Anthropic, Gemini Adapter
	DefaultBase               string
}

func (n ByClientProtocol) pick(call *Call) (Adapter, *Call) {
	a, base := n.route(call.BaseURL, call.Request.GetProtocol())
	c := *call
	c.BaseURL = base
	return a, &c
}

// route is the adapter that speaks the client's protocol and its base URL on the server.
func (n ByClientProtocol) route(baseURL string, p corev1.Protocol) (Adapter, string) {
	root := strings.TrimSuffix(strings.TrimRight(baseURL, "/"), "/v1")
	if root == "" {
		root = n.DefaultBase
	}
	switch p {
	case corev1.Protocol_PROTOCOL_MESSAGES:
		return n.Anthropic, root
	case corev1.Protocol_PROTOCOL_CONTENT_GENERATION:
		return n.Gemini, root
	default:
		return n.OpenAI, root + "/v1"
	}
}

// Generate implements Adapter.
func (n ByClientProtocol) Generate(ctx context.Context, call *Call) (Stream, error) {
	a, c := n.pick(call)
	return a.Generate(ctx, c)
}

// CountTokens implements Adapter.
func (n ByClientProtocol) CountTokens(ctx context.Context, call *Call) (int64, error) {
	a, c := n.pick(call)
	return a.CountTokens(ctx, c)
}

// Embed implements Embedder: an embeddings client goes to the OpenAI side, a
// content-generation client to the Gemini side, both passed through.
func (n ByClientProtocol) Embed(ctx context.Context, call *EmbedCall) (*EmbedResult, error) {
	a, base := n.route(call.BaseURL, call.Request.GetProtocol())
	e, ok := a.(Embedder)
	if !ok {
		return nil, &Error{Message: "the simulator's adapter for this protocol cannot embed"}
	}
	c := *call
	c.BaseURL = base
	return e.Embed(ctx, &c)
}
