package openai

import (
	"context"

	"github.com/gorilla/websocket"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/provider"
)

// DialRealtime implements provider.RealtimeDialer: the GA realtime endpoint below the base URL.
func (Adapter) DialRealtime(ctx context.Context, up provider.Upstream, open *corev1.RealtimeOpen) (*websocket.Conn, error) {
	return provider.DialOpenAIRealtime(ctx, up.BaseURL, up, open)
}
