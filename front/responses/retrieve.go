package responses

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// StoredHandler serves the stored-response routes: GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items. Core checks the key and its responses family and
// answers the JSON written here as it is.
type StoredHandler struct {
	Core corev1.CoreServiceClient
}

// StoredPrefix is the path prefix of the routes; /v1/responses/compact is a generation route
// and is served before this one.
const StoredPrefix = "/v1/responses/"

const inputItemsSuffix = "/input_items"

// ServeHTTP implements http.Handler.
func (h *StoredHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, StoredPrefix)
	id, items := strings.CutSuffix(rest, inputItemsSuffix)
	if id == "" || strings.Contains(id, "/") {
		relay.WriteError(w, r, apierror.New(apierror.NotFound, "no route for %s %s", r.Method, r.URL.Path))
		return
	}
	allow := "GET, DELETE"
	if items {
		allow = "GET"
	}
	if !(r.Method == http.MethodGet || (r.Method == http.MethodDelete && !items)) {
		w.Header().Set("Allow", allow)
		relay.WriteError(w, r, apierror.New(apierror.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	key := relay.ExtractKey(r)
	if key == "" {
		relay.WriteError(w, r, apierror.New(apierror.InvalidKey, "no API key was provided"))
		return
	}
	relay.SetBearer(r, key)
	ctx := relay.OutgoingContext(r)
	var out *corev1.StoredResponseJSON
	var err error
	switch {
	case items:
		out, err = h.listItems(ctx, r, id)
	case r.Method == http.MethodDelete:
		out, err = h.Core.DeleteStoredResponse(ctx, &corev1.DeleteStoredResponseRequest{Id: id})
	default:
		out, err = h.Core.GetStoredResponse(ctx, &corev1.GetStoredResponseRequest{Id: id})
	}
	if err != nil {
		relay.WriteError(w, r, relay.ErrorOf(err))
		return
	}
	relay.SetJSON(w.Header())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.GetJson())
}

func (h *StoredHandler) listItems(ctx context.Context, r *http.Request, id string) (*corev1.StoredResponseJSON, error) {
	q := r.URL.Query()
	req := &corev1.ListStoredResponseInputItemsRequest{Id: id, After: q.Get("after"), Order: q.Get("order")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return nil, apierror.New(apierror.InvalidRequest, "limit must be an integer between 1 and 100")
		}
		req.Limit = int32(n)
	}
	return h.Core.ListStoredResponseInputItems(ctx, req)
}
