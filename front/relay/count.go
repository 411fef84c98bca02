package relay

import (
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/callmd"
)

// CountProtocol is a token-counting route.
type CountProtocol interface {
	// Decode builds the canonical request whose input is counted.
	Decode(r *http.Request, body []byte) (*corev1.GenerateRequest, *apierror.Error)
	// Render writes the protocol's count object.
	Render(w http.ResponseWriter, r *http.Request, inputTokens int64)
}

// CountHandler serves a token-counting route; counting is free and never streams.
type CountHandler struct {
	Core   corev1.CoreServiceClient
	Proto  CountProtocol
	Limit  int64
	Family string
}

func (h *CountHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := OutgoingContext(r)
	body, apiErr := ReadJSON(r, h.Limit)
	var req *corev1.GenerateRequest
	if apiErr == nil {
		req, apiErr = h.Proto.Decode(r, body)
	}
	if apiErr != nil {
		WriteError(w, r, (&Handler{Core: h.Core, Family: h.Family}).keyFirst(ctx, apiErr))
		return
	}
	req.RawBody = body
	var md metadata.MD // core's rate-limit headers, refusal or not
	resp, err := h.Core.CountTokens(ctx, &corev1.CountTokensRequest{Request: req}, grpc.Header(&md))
	callmd.CopyRateLimit(w.Header(), md)
	if err != nil {
		WriteError(w, r, apistatus.FromError(err))
		return
	}
	h.Proto.Render(w, r, resp.GetInputTokens())
}
