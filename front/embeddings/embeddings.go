// Package embeddings serves POST /v1/embeddings: it decodes the request into core's
// EmbedRequest and renders core's answer, the upstream's own body when the upstream spoke
// this protocol, otherwise a list built from the vectors in the encoding the client asked
// for (openai-node asks for base64 by default and cannot read float arrays then).
package embeddings

import (
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/callmd"
	"modelgateway/front/relay"
)

// Family is the contract's endpoint family of the route.
const Family = "embeddings"

// Handler serves POST /v1/embeddings. It expects the method checked, the key normalised into
// Authorization: Bearer and the request id set (front.Server does all three).
type Handler struct {
	Core corev1.CoreServiceClient
	// Limit is the body limit in bytes (spec 8).
	Limit int64
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := relay.OutgoingContext(r)
	body, apiErr := relay.ReadJSON(r, h.Limit)
	var in *decoded
	if apiErr == nil {
		in, apiErr = decode(body)
	}
	if apiErr != nil {
		relay.WriteError(w, r, relay.KeyFirst(ctx, h.Core, Family, apiErr))
		return
	}
	var md metadata.MD // core's rate-limit headers, refusal or not
	resp, err := h.Core.Embed(ctx, in.req, grpc.Header(&md))
	callmd.CopyRateLimit(w.Header(), md)
	if err != nil {
		relay.WriteError(w, r, relay.ErrorOf(err))
		return
	}
	out := resp.GetNativeBody()
	if len(out) == 0 {
		if out, apiErr = renderList(resp, in.req.GetModel(), in.base64); apiErr != nil {
			relay.WriteError(w, r, apiErr)
			return
		}
	}
	WriteAnswer(w, resp.GetUsage(), out)
}

// WriteAnswer sends a JSON answer with the cost headers of a charged call (the generation
// routes send the same).
func WriteAnswer(w http.ResponseWriter, u *corev1.Usage, body []byte) {
	h := w.Header()
	if u.GetCost() != "" {
		relay.SetCost(h, u.GetCost(), u.GetCurrency())
	}
	relay.SetJSON(h)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
