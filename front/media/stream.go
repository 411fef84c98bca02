package media

import (
	"context"

	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/front/relay"
)

// stream is the server side of the in-process Forward call: Recv reads the client's request,
// Send writes the answer. As with any gRPC stream, one goroutine may receive while another
// sends.
type stream struct {
	ctx context.Context
	req *request
	ans *answer
}

var _ corev1.CoreService_ForwardServer = (*stream)(nil)

func (s *stream) Context() context.Context        { return s.ctx }
func (s *stream) SetHeader(md metadata.MD) error  { s.ans.setHeader(md); return nil }
func (s *stream) SendHeader(md metadata.MD) error { s.ans.setHeader(md); return nil }
func (s *stream) SetTrailer(metadata.MD)          {}

func (s *stream) Recv() (*corev1.ForwardRequest, error) { return s.req.recv() }

func (s *stream) Send(m *corev1.ForwardResponse) error { return s.ans.send(m) }

// RecvMsg serves interceptors and generic stream wrappers; it copies, so the reused data
// message stays private.
func (s *stream) RecvMsg(m any) error { return relay.RecvMsg(m, s.Recv) }
func (s *stream) SendMsg(m any) error { return relay.SendMsg(m, s.Send) }
