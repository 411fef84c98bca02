package relay

import (
	"net/http"
)

// heldResponse collects a non-streaming answer so that headers can still be added after the
// encoder has rendered it.
type heldResponse struct {
	header http.Header
	status int
	body   []byte
}

func (h *heldResponse) Header() http.Header    { return h.header }
func (h *heldResponse) WriteHeader(status int) { h.status = status }
func (h *heldResponse) Write(b []byte) (int, error) {
	h.body = append(h.body, b...)
	return len(b), nil
}

func (h *heldResponse) send(w http.ResponseWriter) {
	w.Header().Del("Content-Length")
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body)
}
