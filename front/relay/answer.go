package relay

import (
	"errors"
	"net/http"
	"strconv"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// WriteAnswer sends a whole JSON answer with its length. A failed write means the client has
// gone; it is not reported, since the status line is out and the relay must not write an
// error envelope after it.
func WriteAnswer(w http.ResponseWriter, body []byte) {
	h := w.Header()
	SetJSON(h)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// Passthrough is the part of a non-streaming encoder that answers a passthrough request: the
// events then carry the upstream's own body, which goes to the client as it is, and nothing
// is rendered from the canonical events.
type Passthrough struct {
	on     bool
	native []byte
}

// Start notes whether the answer is passthrough.
func (p *Passthrough) Start(s *corev1.Start) { p.on = s.GetPassthrough() }

// Event keeps the upstream's body; true means the answer is passthrough and the encoder has
// nothing to render from ev.
func (p *Passthrough) Event(ev *corev1.GenerateEvent) bool {
	if !p.on {
		return false
	}
	if n := ev.GetNative(); n != nil {
		p.native = n.GetData()
	}
	return true
}

// Finish writes the upstream's body; true means the answer was passthrough and err is the
// encoder's result.
func (p *Passthrough) Finish(w http.ResponseWriter) (done bool, err error) {
	if !p.on {
		return false, nil
	}
	if p.native == nil {
		return true, errors.New("the upstream answered nothing")
	}
	WriteAnswer(w, p.native)
	return true, nil
}
