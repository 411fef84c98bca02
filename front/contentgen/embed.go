package contentgen

import (
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
	"modelgateway/front/embeddings"
	"modelgateway/front/relay"
)

// EmbedHandler serves :embedContent and :batchEmbedContents. It expects the method checked,
// the key normalised into Authorization: Bearer and the request id set (front.Server does
// all three).
type EmbedHandler struct {
	Core corev1.CoreServiceClient
	// Limit is the body limit in bytes (spec 8).
	Limit int64
}

func (h *EmbedHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := relay.OutgoingContext(r)
	body, apiErr := relay.ReadJSON(r, h.Limit)
	var req *corev1.EmbedRequest
	if apiErr == nil {
		req, apiErr = decodeEmbed(r.URL.Path, body)
	}
	if apiErr != nil {
		relay.WriteError(w, r, relay.KeyFirst(ctx, h.Core, FamilyEmbed, apiErr))
		return
	}
	var md metadata.MD // core's rate-limit headers, refusal or not
	resp, err := h.Core.Embed(ctx, req, grpc.Header(&md))
	callmd.CopyRateLimit(w.Header(), md)
	if err != nil {
		relay.WriteError(w, r, relay.ErrorOf(err))
		return
	}
	out := resp.GetNativeBody()
	if len(out) == 0 {
		if out, apiErr = renderEmbed(resp, req.GetBatch()); apiErr != nil {
			relay.WriteError(w, r, apiErr)
			return
		}
	}
	embeddings.WriteAnswer(w, resp.GetUsage(), out)
}

// renderEmbed builds {"embedding":{"values":[...]}} for :embedContent and
// {"embeddings":[{"values":[...]},...]} for :batchEmbedContents from translated vectors.
func renderEmbed(resp *corev1.EmbedResponse, batch bool) ([]byte, *apierror.Error) {
	embs := resp.GetEmbeddings()
	if !batch && len(embs) != 1 {
		return nil, apierror.New(apierror.UpstreamError, "the upstream answered %d embeddings for one content", len(embs))
	}
	size := 64
	for _, e := range embs {
		size += 16 + 16*len(e.GetValues())
	}
	out := make([]byte, 0, size)
	if batch {
		out = append(out, `{"embeddings":[`...)
	} else {
		out = append(out, `{"embedding":`...)
	}
	for i, e := range embs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"values":`...)
		var err error
		if out, err = embeddings.AppendFloats(out, e.GetValues()); err != nil {
			return nil, apierror.New(apierror.UpstreamError, "embedding %d: %v", i, err)
		}
		out = append(out, '}')
	}
	if batch {
		out = append(out, ']')
	}
	return append(out, "}\n"...), nil
}
