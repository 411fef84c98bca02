package media

import (
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
	"modelgateway/front/relay"
)

var (
	errAnswerEnded = errors.New("media: the answer has already ended")
	errNoHead      = errors.New("media: the answer has no head yet")
)

// answer is the server side of the stream: core's head, data and usage become the HTTP
// response. A JSON or text answer is held until its usage (and so its cost) is known, so that
// the cost can travel in the headers; a binary answer (speech audio) goes out as it comes,
// without cost headers. mu guards against a Send after the handler has returned.
type answer struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	r       *http.Request
	req     *request
	head    *corev1.ForwardResponseHead
	binary  bool
	held    []byte
	usage   *corev1.Usage
	started bool // the status line has been written
	charged bool // a binary answer's usage came: its charge is committed
	ended   bool // nothing more may be written
}

// send renders one message. An error tells core that the client cannot be reached any more,
// so that it stops and charges nothing.
func (a *answer) send(m *corev1.ForwardResponse) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return errAnswerEnded
	}
	if err := a.r.Context().Err(); err != nil {
		return fmt.Errorf("media: the client has gone: %w", err)
	}
	switch msg := m.GetMsg().(type) {
	case *corev1.ForwardResponse_Head:
		if a.head != nil || msg.Head == nil {
			return errors.New("media: the answer needs exactly one head")
		}
		a.head = msg.Head
		a.binary = isBinary(msg.Head.GetContentType())
		return nil
	case *corev1.ForwardResponse_Data:
		if a.head == nil {
			return errNoHead
		}
		if !a.binary {
			a.held = append(a.held, msg.Data...)
			return nil
		}
		if !a.started {
			a.begin()
		}
		if _, err := a.w.Write(msg.Data); err != nil {
			return fmt.Errorf("media: writing the answer: %w", err)
		}
		if err := http.NewResponseController(a.w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return fmt.Errorf("media: flushing the answer: %w", err)
		}
		return nil
	case *corev1.ForwardResponse_Usage:
		if a.head == nil {
			return errNoHead
		}
		if a.binary {
			// Its headers have gone; the usage says the charge is committed, so the body may end.
			a.charged = true
			return nil
		}
		a.usage = msg.Usage
		a.ended = true
		return a.writeHeld()
	default:
		return fmt.Errorf("media: unexpected answer message %T", msg)
	}
}

// finish ends the answer once Forward has returned err; failure is the client body's own
// failure, which explains an error better than whatever core made of it. It reports cut when
// a binary answer went out without its usage, so uncharged (the upstream broke off, or the
// charge could not be committed): the caller must then abort the response, so that the
// client sees a broken transfer and never a complete-looking body it was not charged for.
func (a *answer) finish(err error, failure *apierror.Error) (cut bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ended {
		return false // held answer already written at its usage
	}
	a.ended = true
	switch {
	case a.started:
		// A binary answer has begun: complete once its usage came, else only cutting it short
		// is left.
		return !a.charged
	case a.head != nil && err == nil && a.binary:
		a.begin() // an empty body
	case a.head != nil && err == nil:
		_ = a.writeHeld()
	case failure != nil:
		relay.WriteError(a.w, a.r, failure)
	case err != nil:
		relay.WriteError(a.w, a.r, relay.ErrorOf(err))
	default:
		relay.WriteError(a.w, a.r, apierror.New(apierror.UpstreamError, "the upstream answered nothing"))
	}
	return false
}

// begin writes the head of a binary answer. The client's body is finished with first: the
// answer is written from this goroutine only once nothing reads the body any more.
func (a *answer) begin() {
	a.req.close()
	a.started = true
	if ct := a.head.GetContentType(); ct != "" {
		a.w.Header().Set("Content-Type", ct)
	}
	a.w.WriteHeader(status(a.head))
}

// setHeader copies core's rate-limit headers into the answer while its head is unwritten.
func (a *answer) setHeader(md metadata.MD) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.started && !a.ended {
		callmd.CopyRateLimit(a.w.Header(), md)
	}
}

func (a *answer) writeHeld() error {
	a.req.close()
	a.started = true
	h := a.w.Header()
	if ct := a.head.GetContentType(); ct != "" {
		h.Set("Content-Type", ct)
	}
	if cost := a.usage.GetCost(); cost != "" {
		h.Set("X-Request-Cost", cost)
		h.Set("X-Request-Currency", a.usage.GetCurrency())
	}
	h.Set("Content-Length", strconv.Itoa(len(a.held)))
	a.w.WriteHeader(status(a.head))
	if _, err := a.w.Write(a.held); err != nil {
		return fmt.Errorf("media: writing the answer: %w", err)
	}
	return nil
}

func status(h *corev1.ForwardResponseHead) int {
	if s := int(h.GetStatus()); s != 0 {
		return s
	}
	return http.StatusOK
}

// isBinary tells answers that stream (audio, raw bytes) from those held whole (JSON, text).
func isBinary(contentType string) bool {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return strings.HasPrefix(mediaType, "audio/") || mediaType == "application/octet-stream"
}
