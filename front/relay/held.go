package relay

import (
	"net/http"
	"sync"
)

// heldResponse collects a non-streaming answer so that headers can still be added after the
// encoder has rendered it.
type heldResponse struct {
	header http.Header
	status int
	body   []byte
	// buf is the pooled buffer body is in (heldBufs); nil before the first write.
	buf *[]byte
}

// heldBufs recycles the held answers' buffers: an answer is held only until it is sent, and
// the writer below copies what it is given (into its own buffer or the connection), so the
// buffer is free again at once; each answer cost an allocation of its size otherwise.
var heldBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// maxPooledHeld bounds the buffers kept: a rare large answer does not stay in the pool.
const maxPooledHeld = 64 << 10

func (h *heldResponse) Header() http.Header    { return h.header }
func (h *heldResponse) WriteHeader(status int) { h.status = status }
func (h *heldResponse) Write(b []byte) (int, error) {
	if h.buf == nil {
		h.buf = heldBufs.Get().(*[]byte)
		h.body = (*h.buf)[:0]
	}
	h.body = append(h.body, b...)
	return len(b), nil
}

// send writes the answer to w and gives its buffer back: the answer is over.
func (h *heldResponse) send(w http.ResponseWriter) {
	w.Header().Del("Content-Length")
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body)
	if h.buf != nil {
		if cap(h.body) <= maxPooledHeld {
			*h.buf = h.body[:0]
			heldBufs.Put(h.buf)
		}
		h.buf, h.body = nil, nil
	}
}
