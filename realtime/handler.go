package realtime

import (
	"context"
	"net/http"
	"sync"
	"time"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/front/relay"
)

// SessionFunc runs core's Realtime RPC for one session in process, in the caller's goroutine,
// with stream as its server side (see relay.GenerateFunc; in the binary it is
// core/rpc.InProcess.Realtime). Interceptors are the caller's to apply.
type SessionFunc func(stream corev1.CoreService_RealtimeServer) error

// Defaults of the Handler's limits.
const (
	DefaultIdleTimeout  = 10 * time.Minute
	DefaultMaxMessage   = 16 << 20
	DefaultWriteTimeout = 10 * time.Second
	// closeWait is how long a closing session waits for the client's close reply before it
	// drops the connection.
	closeWait = 3 * time.Second
)

// Handler serves GET /v1/realtime. The zero value with Realtime set is ready to use.
type Handler struct {
	Realtime SessionFunc
	// IdleTimeout closes a session (1001 "idle timeout") after no frame in either direction
	// for this long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxMessage bounds one client message in bytes; a larger one closes the session with
	// 1009. 0 means DefaultMaxMessage.
	MaxMessage int64
	// WriteTimeout bounds each write to the client; 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration

	mu       sync.Mutex
	sessions map[*session]struct{}
	closing  bool
	drained  chan struct{} // made by Shutdown, closed when the last session has ended
}

func (h *Handler) idleTimeout() time.Duration {
	if h.IdleTimeout > 0 {
		return h.IdleTimeout
	}
	return DefaultIdleTimeout
}

func (h *Handler) maxMessage() int64 {
	if h.MaxMessage > 0 {
		return h.MaxMessage
	}
	return DefaultMaxMessage
}

func (h *Handler) writeTimeout() time.Duration {
	if h.WriteTimeout > 0 {
		return h.WriteTimeout
	}
	return DefaultWriteTimeout
}

// ServeHTTP expects the request id set and a header key, if any, normalised into
// Authorization: Bearer (front.Server does both); it also reads the key that browsers can only
// send as a subprotocol. Every refusal before core opens the session is the spec envelope.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	open, apiErr := handshake(r)
	if apiErr != nil {
		relay.WriteError(w, r, apiErr)
		return
	}
	s := newSession(h, w, r, open)
	if !h.register(s) {
		relay.WriteError(w, r, apierror.New(apierror.Unavailable, "the server is shutting down"))
		return
	}
	defer h.unregister(s)
	err := h.Realtime(&stream{s: s})
	s.end(err)
}

func (h *Handler) register(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	if h.sessions == nil {
		h.sessions = map[*session]struct{}{}
	}
	h.sessions[s] = struct{}{}
	return true
}

func (h *Handler) unregister(s *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.sessions, s)
	h.signalDrained()
}

// signalDrained closes drained once shutting down with no session left; h.mu is held.
func (h *Handler) signalDrained() {
	if h.closing && len(h.sessions) == 0 {
		select {
		case <-h.drained:
		default:
			close(h.drained)
		}
	}
}

func (h *Handler) isClosing() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closing
}

func (h *Handler) live() []*session {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*session, 0, len(h.sessions))
	for s := range h.sessions {
		out = append(out, s)
	}
	return out
}

// Shutdown drains the route: new requests are refused (503 unavailable), every live session
// is sent 1001 "server shutting down" so that its close handshake runs through core and the
// upstream, and Shutdown waits until all sessions have ended. When ctx is done first, the
// remaining connections are dropped and their sessions' contexts cancelled.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closing = true
	if h.drained == nil {
		h.drained = make(chan struct{})
	}
	drained := h.drained
	h.signalDrained()
	h.mu.Unlock()

	// A session still waiting for core to open it is closed as soon as it opens (see
	// session.upgrade), since it is registered and closing is already set. The close frames
	// go out in parallel: one slow client must not hold up the others for its write timeout.
	for _, s := range h.live() {
		go func() { _ = s.closeClient(closeGoingAway, "server shutting down") }()
	}
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
	}
	for _, s := range h.live() {
		s.drop()
	}
	return ctx.Err()
}
