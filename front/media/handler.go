package media

import (
	"context"
	"mime"
	"net/http"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// ForwardFunc runs core's Forward RPC in process with stream as its server side, in the
// caller's goroutine (as relay.GenerateFunc does for Generate; in the binary it is
// core/rpc.InProcess.Forward). Interceptors are the caller's to apply.
type ForwardFunc func(stream corev1.CoreService_ForwardServer) error

// Handler serves one forwarded route (core's Forward RPC).
type Handler struct {
	// Core serves the key check when the body is rejected before core sees it.
	Core    corev1.CoreServiceClient
	Forward ForwardFunc
	// Family is the endpoint family, e.g. "images.edits".
	Family string
	// Limit is the route's body limit in bytes (spec 8).
	Limit int64
	// Multipart marks a multipart/form-data route; the others take JSON.
	Multipart bool
	// TempDir is where file parts are staged; "" is os.TempDir().
	TempDir string
}

// ServeHTTP expects the method checked, the key normalised into Authorization: Bearer and the
// request id set (front.Server does all three).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := &request{}
	defer req.close() // the staged files go, whatever happens
	if apiErr := h.open(r, req); apiErr != nil {
		relay.WriteError(w, r, relay.KeyFirst(relay.OutgoingContext(r), h.Core, h.Family, apiErr))
		return
	}
	ctx, cancel := context.WithCancel(relay.IncomingContext(r))
	defer cancel() // however the handler ends, the upstream request ends too
	s := &stream{ctx: ctx, req: req, ans: &answer{w: w, r: r, req: req}}
	err := h.Forward(s)
	cancel()
	// Nothing may read the client's body once the answer is being written or the handler has
	// returned: a Recv still running elsewhere is waited for here.
	req.close()
	if s.ans.finish(err, req.failure()) {
		// The standard way to break a response off: the connection (HTTP/1) or the stream
		// (HTTP/2) is reset without the end of the body, and net/http logs nothing.
		panic(http.ErrAbortHandler)
	}
}

// open checks the content type and the declared size, then reads the body up to the head.
func (h *Handler) open(r *http.Request, req *request) *apierror.Error {
	boundary, apiErr := h.checkContentType(r.Header.Get("Content-Type"))
	if apiErr != nil {
		return apiErr
	}
	if r.ContentLength > h.Limit {
		return tooLarge(h.Limit)
	}
	if !h.Multipart {
		body, apiErr := relay.ReadJSON(r, h.Limit)
		if apiErr != nil {
			return apiErr
		}
		req.head, apiErr = jsonHead(h.Family, body)
		return apiErr
	}
	req.form = newForm(h.Family, h.TempDir, &limitedBody{r: r.Body, limit: h.Limit}, boundary, r.ContentLength)
	head, err := req.form.readHead()
	if err != nil {
		return bodyError(err)
	}
	req.head = head
	return nil
}

// checkContentType accepts JSON (any parameters) or a form with its boundary (spec 4.4).
func (h *Handler) checkContentType(contentType string) (boundary string, _ *apierror.Error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	switch {
	case err != nil:
	case h.Multipart && mediaType == "multipart/form-data" && params["boundary"] != "":
		return params["boundary"], nil
	case !h.Multipart && mediaType == "application/json":
		return "", nil
	}
	want := "application/json"
	if h.Multipart {
		want = "multipart/form-data with a boundary"
	}
	return "", apierror.New(apierror.UnsupportedContentType, "this route takes %s, not %q", want, contentType)
}
