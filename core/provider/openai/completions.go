package openai

import (
	"context"

	"modelgateway/core/provider"
)

// completionsPassthrough sends a legacy completions client's own body to the upstream's
// /completions route. The route's stream and usage have the chat shapes, so the chat
// passthrough serves it (chat.go).
func completionsPassthrough(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	return passthrough(ctx, call, "/completions")
}
