package statusdata

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	statusv1 "modelgateway/gen/gateway/status/v1"
)

// Server feeds the public status site; it needs no key.
type Server struct {
	statusv1.UnimplementedStatusServiceServer
	Reader *Reader
}

// GetStatus implements the status site's one read.
func (s *Server) GetStatus(ctx context.Context, _ *statusv1.GetStatusRequest) (*statusv1.GetStatusResponse, error) {
	return s.Reader.Status(ctx)
}

// AdminInterceptor counts every admin RPC for the status site's admin API component.
// Outermost in the chain, it sees the final gRPC status: errors a caller causes (bad token,
// bad input, unknown object, conflict) do not count against the component.
func AdminInterceptor(rec *Recorder) grpc.UnaryServerInterceptor {
	prefix := "/" + adminv1.AdminService_ServiceDesc.ServiceName + "/"
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, prefix) {
			return handler(ctx, req)
		}
		start := time.Now()
		resp, err := handler(ctx, req)
		switch status.Code(err) {
		case codes.OK:
			rec.RecordAdmin(start, time.Now(), true, true)
		case codes.Internal, codes.Unknown, codes.Unavailable, codes.DataLoss, codes.DeadlineExceeded, codes.Unimplemented:
			rec.RecordAdmin(start, time.Now(), true, false)
		}
		return resp, err
	}
}
