package realtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
	"modelgateway/front/relay"
)

var (
	errNotOpen = errors.New("realtime: the session is not open")
	errEnded   = errors.New("realtime: the session has ended")
)

// upgrader answers "realtime" to browsers that offer it (they abort otherwise). Any origin
// may connect: the key, not a cookie, is the credential. Write buffers are pooled, so an idle
// session holds none.
var upgrader = websocket.Upgrader{
	CheckOrigin:     func(*http.Request) bool { return true },
	Subprotocols:    []string{protocolRealtime},
	WriteBufferPool: &sync.Pool{},
	Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
		code := apierror.InvalidRequest
		if status >= http.StatusInternalServerError {
			code = apierror.Internal
		}
		relay.WriteError(w, r, &apierror.Error{Code: code, Status: status, Message: reason.Error()})
	},
}

// session is one client connection, from the handshake to the end of the SessionFunc.
type session struct {
	h      *Handler
	w      http.ResponseWriter
	r      *http.Request
	ctx    context.Context
	cancel context.CancelFunc
	open   *corev1.RealtimeOpen
	opened bool // Recv has returned the open message (Recv's goroutine only)

	// The reader goroutine sets readErr, then closes frames; readerDone follows.
	frames       chan *corev1.Frame
	readErr      error
	readerDone   chan struct{}
	stopped      chan struct{} // closed once core has returned: the reader discards frames
	clientClosed atomic.Bool   // the client's close frame has been read

	start    time.Time
	lastSeen atomic.Int64 // time.Duration since start of the last frame either way

	conn atomic.Pointer[websocket.Conn] // set once, by the upgrade

	mu         sync.Mutex  // serialises writes to the client and guards what follows
	answered   bool        // the HTTP request has been answered (upgrade or refusal)
	rateLimit  metadata.MD // core's rate-limit headers for the upgrade (setHeader)
	closeSent  bool
	ended      bool // nothing more is written
	idle       *time.Timer
	closeTimer *time.Timer
}

func newSession(h *Handler, w http.ResponseWriter, r *http.Request, open *corev1.RealtimeOpen) *session {
	ctx, cancel := context.WithCancel(relay.IncomingContext(r))
	return &session{
		h: h, w: w, r: r, ctx: ctx, cancel: cancel, open: open,
		frames:     make(chan *corev1.Frame, 1),
		readerDone: make(chan struct{}),
		stopped:    make(chan struct{}),
		start:      time.Now(),
	}
}

// setHeader keeps core's rate-limit headers for the answer to the handshake: the upgrade, or
// the refusal (which writes w's headers).
func (s *session) setHeader(md metadata.MD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.answered {
		s.rateLimit = metadata.Join(s.rateLimit, md)
		callmd.CopyRateLimit(s.w.Header(), md)
	}
}

// upgrade answers the handshake when core has opened the session.
func (s *session) upgrade() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answered {
		return errors.New("realtime: the session was opened twice or after it ended")
	}
	s.answered = true
	h := http.Header{"X-Request-Id": {s.r.Header.Get("X-Request-Id")}}
	callmd.CopyRateLimit(h, s.rateLimit)
	conn, err := upgrader.Upgrade(s.w, s.r, h)
	if err != nil {
		return fmt.Errorf("realtime: upgrading the connection: %w", err)
	}
	conn.SetReadLimit(s.h.maxMessage())
	// Pings, pongs and the close handshake are the upstream's to answer: they go to core
	// like any frame, and nothing is answered here.
	conn.SetPingHandler(s.control(corev1.FrameKind_FRAME_KIND_PING))
	conn.SetPongHandler(s.control(corev1.FrameKind_FRAME_KIND_PONG))
	conn.SetCloseHandler(func(int, string) error { return nil })
	s.touch()
	s.conn.Store(conn)
	go s.read(conn)
	s.idle = time.AfterFunc(s.h.idleTimeout(), s.checkIdle)
	if s.h.isClosing() {
		_ = s.closeLocked(closeGoingAway, "server shutting down")
	}
	return nil
}

// end runs when the SessionFunc has returned. Before the upgrade, its error is the answer;
// after, the client is sent a close frame (unless it already has one), given a moment to
// reply, and the connection is closed.
func (s *session) end(err error) {
	defer s.cancel()
	s.mu.Lock()
	if !s.answered {
		s.answered, s.ended = true, true
		s.mu.Unlock()
		if err == nil {
			err = apierror.New(apierror.UpstreamError, "the realtime session was not opened")
		}
		relay.WriteError(s.w, s.r, relay.ErrorOf(err))
		return
	}
	conn := s.conn.Load()
	if conn == nil { // the upgrade failed and has answered
		s.ended = true
		s.mu.Unlock()
		return
	}
	s.idle.Stop()
	if !s.closeSent {
		code, reason := closeNormal, ""
		if err != nil {
			e := relay.ErrorOf(err)
			code, reason = closeInternal, e.Code+": "+e.Message
		}
		_ = s.closeLocked(code, reason)
	}
	s.ended = true
	s.mu.Unlock()

	close(s.stopped)
	<-s.readerDone // the client's close reply, its drop, or closeTimer
	if !s.clientClosed.Load() {
		linger(conn)
	}
	s.mu.Lock()
	if s.closeTimer != nil {
		s.closeTimer.Stop()
	}
	s.mu.Unlock()
	_ = conn.Close()
}

// linger reads and discards what the client still sends until it closes its side or closeWait
// has passed. Closing a socket with unread data resets the connection, and the client could
// lose the close frame it has not read yet: after a message over the size limit, most of the
// message is still unread.
func linger(conn *websocket.Conn) {
	nc := conn.NetConn()
	_ = nc.SetReadDeadline(time.Now().Add(closeWait))
	_, _ = io.Copy(io.Discard, nc)
}

// drop ends the session at once, without a handshake.
func (s *session) drop() {
	s.cancel()
	if c := s.conn.Load(); c != nil {
		_ = c.Close()
	}
}

// touch records activity for the idle timeout.
func (s *session) touch() {
	s.lastSeen.Store(int64(time.Since(s.start)))
}

// checkIdle runs when the idle timer fires: it closes the session if nothing has crossed
// since, else waits for the rest of the timeout.
func (s *session) checkIdle() {
	left := s.h.idleTimeout() - (time.Since(s.start) - time.Duration(s.lastSeen.Load()))
	if left <= 0 {
		_ = s.closeClient(closeGoingAway, "idle timeout")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended && !s.closeSent {
		s.idle.Reset(left)
	}
}
