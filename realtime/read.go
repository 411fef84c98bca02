package realtime

import (
	"errors"
	"fmt"
	"io"

	"github.com/gorilla/websocket"

	corev1 "modelgateway/gen/gateway/core/v1"
)

// recv serves Recv: the open message, then what the reader goroutine hands over.
func (s *session) recv() (*corev1.RealtimeRequest, error) {
	if !s.opened {
		s.opened = true
		return &corev1.RealtimeRequest{Msg: &corev1.RealtimeRequest_Open{Open: s.open}}, nil
	}
	if s.conn.Load() == nil {
		return nil, errNotOpen
	}
	f, ok := <-s.frames
	if !ok {
		return nil, s.readErr
	}
	return &corev1.RealtimeRequest{Msg: &corev1.RealtimeRequest_Frame{Frame: f}}, nil
}

// read is the session's only reader of the client connection. Control frames arrive through
// the handlers, inside ReadMessage, so they too are pushed from this goroutine.
func (s *session) read(conn *websocket.Conn) {
	defer close(s.readerDone)
	defer close(s.frames)
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			s.readErr = s.readEnded(err)
			return
		}
		s.touch()
		f := &corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_TEXT, Data: data}
		if kind == websocket.BinaryMessage {
			f.Kind = corev1.FrameKind_FRAME_KIND_BINARY
		}
		s.push(f)
	}
}

// readEnded turns the reader's last error into what Recv returns after the last frame.
func (s *session) readEnded(err error) error {
	// gorilla reports a connection that ends mid-stream as a close with 1006, a code that
	// never travels in a close frame.
	var ce *websocket.CloseError
	if errors.As(err, &ce) && ce.Code != websocket.CloseAbnormalClosure {
		s.clientClosed.Store(true)
		s.touch()
		s.push(&corev1.Frame{Kind: corev1.FrameKind_FRAME_KIND_CLOSE, CloseCode: int32(ce.Code), CloseReason: ce.Text})
		return io.EOF
	}
	// The client has gone, or broke the protocol (gorilla has then sent the close frame,
	// 1009 for a message over the limit): the session is over, and core's upstream call
	// ends with it.
	s.cancel()
	return fmt.Errorf("realtime: reading from the client: %w", err)
}

// push hands a frame to Recv, waiting while core is busy: a slow upstream stops the reading
// of the client. Once core has returned, frames are dropped.
func (s *session) push(f *corev1.Frame) {
	select {
	case s.frames <- f:
	case <-s.stopped:
	}
}

func (s *session) control(kind corev1.FrameKind) func(string) error {
	return func(data string) error {
		s.touch()
		s.push(&corev1.Frame{Kind: kind, Data: []byte(data)})
		return nil
	}
}
