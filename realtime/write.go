package realtime

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// Close codes the front itself closes a session with.
const (
	closeNormal    = websocket.CloseNormalClosure
	closeGoingAway = websocket.CloseGoingAway
	closeInternal  = websocket.CloseInternalServerErr
	// maxCloseReason is what fits in a close frame (125 bytes) after the code.
	maxCloseReason = 123
)

// writeFrame writes one of core's frames to the client.
func (s *session) writeFrame(f *corev1.Frame) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	conn := s.conn.Load()
	switch {
	case conn == nil:
		return errNotOpen
	case s.ended:
		return errEnded
	}
	deadline := time.Now().Add(s.h.writeTimeout())
	var err error
	switch f.GetKind() {
	case corev1.FrameKind_FRAME_KIND_TEXT, corev1.FrameKind_FRAME_KIND_BINARY:
		kind := websocket.TextMessage
		if f.GetKind() == corev1.FrameKind_FRAME_KIND_BINARY {
			kind = websocket.BinaryMessage
		}
		if err = conn.SetWriteDeadline(deadline); err == nil {
			err = conn.WriteMessage(kind, f.GetData())
		}
	case corev1.FrameKind_FRAME_KIND_PING:
		err = conn.WriteControl(websocket.PingMessage, f.GetData(), deadline)
	case corev1.FrameKind_FRAME_KIND_PONG:
		err = conn.WriteControl(websocket.PongMessage, f.GetData(), deadline)
	case corev1.FrameKind_FRAME_KIND_CLOSE:
		return s.closeLocked(int(f.GetCloseCode()), f.GetCloseReason())
	default:
		return fmt.Errorf("realtime: cannot send a frame of kind %v", f.GetKind())
	}
	if err != nil {
		return fmt.Errorf("realtime: writing to the client: %w", err)
	}
	s.touch()
	return nil
}

// closeClient starts the close handshake with the client, once.
func (s *session) closeClient(code int, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn.Load() == nil || s.ended {
		return nil
	}
	return s.closeLocked(code, reason)
}

// closeLocked sends the close frame; s.mu is held. When it answers the client's own close, the
// handshake is complete and the connection goes at once; otherwise the client has closeWait
// to reply.
func (s *session) closeLocked(code int, reason string) error {
	if s.closeSent {
		return nil
	}
	s.closeSent = true
	conn := s.conn.Load()
	err := conn.WriteControl(websocket.CloseMessage, closePayload(code, reason), time.Now().Add(s.h.writeTimeout()))
	if s.clientClosed.Load() {
		_ = conn.Close()
	} else {
		s.closeTimer = time.AfterFunc(closeWait, func() { _ = conn.Close() })
	}
	// gorilla has sent a close itself after a protocol error or an oversized message.
	if err != nil && !errors.Is(err, websocket.ErrCloseSent) {
		return fmt.Errorf("realtime: closing the client connection: %w", err)
	}
	return nil
}

// closePayload builds a close frame's payload. No code means an empty close; a code that may
// not travel in a close frame (1006 for a lost connection, say) becomes 1011, the reason kept.
func closePayload(code int, reason string) []byte {
	if code == 0 || code == websocket.CloseNoStatusReceived {
		return []byte{}
	}
	if !sendable(code) {
		code = closeInternal
	}
	return websocket.FormatCloseMessage(code, truncate(reason, maxCloseReason))
}

// sendable reports whether code may be sent in a close frame (RFC 6455 7.4, IANA registry).
func sendable(code int) bool {
	switch {
	case code >= 3000 && code <= 4999:
		return true
	case code >= 1000 && code <= 1014:
		return code != 1004 && code != websocket.CloseNoStatusReceived && code != websocket.CloseAbnormalClosure
	}
	return false
}

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
