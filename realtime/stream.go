package realtime

import (
	"context"
	"fmt"

	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/front/relay"
)

// stream is the server side of the in-process Realtime call. As with any gRPC stream, one
// goroutine may receive while others send; Send is safe for several senders.
type stream struct {
	s *session
}

var _ corev1.CoreService_RealtimeServer = (*stream)(nil)

// Context carries the key and request id as incoming metadata; it is cancelled when the
// session ends, or as soon as the client is gone.
func (st *stream) Context() context.Context        { return st.s.ctx }
func (st *stream) SetHeader(md metadata.MD) error  { st.s.setHeader(md); return nil }
func (st *stream) SendHeader(md metadata.MD) error { st.s.setHeader(md); return nil }
func (st *stream) SetTrailer(metadata.MD)          {}

// Recv returns the open message first, then the client's frames; io.EOF after the client's
// close frame, another error when the client went away without one.
func (st *stream) Recv() (*corev1.RealtimeRequest, error) { return st.s.recv() }

// Send opens the session (Opened: the connection is upgraded) or writes one frame to the
// client. An error tells core that the client cannot be reached any more.
func (st *stream) Send(m *corev1.RealtimeResponse) error {
	switch msg := m.GetMsg().(type) {
	case *corev1.RealtimeResponse_Opened:
		return st.s.upgrade()
	case *corev1.RealtimeResponse_Frame:
		return st.s.writeFrame(msg.Frame)
	default:
		return fmt.Errorf("realtime: empty response message %T", msg)
	}
}

// RecvMsg serves interceptors and generic stream wrappers.
func (st *stream) RecvMsg(m any) error { return relay.RecvMsg(m, st.Recv) }
func (st *stream) SendMsg(m any) error { return relay.SendMsg(m, st.Send) }
