package batches

import (
	"io"
	"net/http"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// batches serves the batch routes of one API: the collection (create, list), one batch (get;
// delete on Anthropic's), and its cancel and (Anthropic) results.
func (h *Handler) batches(w http.ResponseWriter, r *http.Request, api corev1.BatchAPI, rest string) {
	ctx := relay.OutgoingContext(r)
	base := baseURL(r)
	id, action, _ := strings.Cut(rest, "/")
	anthropic := api == corev1.BatchAPI_BATCH_API_ANTHROPIC
	switch {
	case rest == "":
		switch r.Method {
		case http.MethodPost:
			body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxJSONBody))
			if err != nil {
				relay.WriteError(w, r, apierror.New(apierror.PayloadTooLarge, "the request body is larger than %d bytes", maxJSONBody))
				return
			}
			out, err := h.Core.CreateBatch(ctx, &corev1.CreateBatchRequest{Api: api, Body: body, BaseUrl: base})
			writeJSON(w, r, out, err)
		case http.MethodGet:
			q := r.URL.Query()
			req := &corev1.ListBatchesRequest{Api: api, After: q.Get("after"), BaseUrl: base}
			if anthropic {
				req.After, req.Before = q.Get("after_id"), q.Get("before_id")
			}
			n, ok := limitParam(q.Get("limit"))
			if !ok {
				relay.WriteError(w, r, apierror.New(apierror.InvalidRequest, "limit must be a positive integer"))
				return
			}
			req.Limit = n
			out, err := h.Core.ListBatches(ctx, req)
			writeJSON(w, r, out, err)
		default:
			notAllowed(w, r, "GET, POST")
		}
	case id == "" || strings.Contains(action, "/"):
		noRoute(w, r)
	case action == "":
		switch {
		case r.Method == http.MethodGet:
			out, err := h.Core.GetBatch(ctx, &corev1.GetBatchRequest{Api: api, Id: id, BaseUrl: base})
			writeJSON(w, r, out, err)
		case r.Method == http.MethodDelete && anthropic:
			out, err := h.Core.DeleteBatch(ctx, &corev1.DeleteBatchRequest{Api: api, Id: id, BaseUrl: base})
			writeJSON(w, r, out, err)
		case anthropic:
			notAllowed(w, r, "GET, DELETE")
		default:
			notAllowed(w, r, "GET")
		}
	case action == "cancel":
		if r.Method != http.MethodPost {
			notAllowed(w, r, "POST")
			return
		}
		out, err := h.Core.CancelBatch(ctx, &corev1.CancelBatchRequest{Api: api, Id: id, BaseUrl: base})
		writeJSON(w, r, out, err)
	case action == "results" && anthropic:
		if r.Method != http.MethodGet {
			notAllowed(w, r, "GET")
			return
		}
		stream, err := h.Core.GetBatchResults(ctx, &corev1.GetBatchResultsRequest{Api: api, Id: id})
		streamOut(w, r, stream, err, "application/x-jsonl")
	default:
		noRoute(w, r)
	}
}

// baseURL is the gateway's public base as the client reached it: results_url must point
// there (the TypeScript SDK fetches it as it is, with the caller's key).
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}
