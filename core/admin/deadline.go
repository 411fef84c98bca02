package admin

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

// DefaultDeadline bounds an admin RPC, whose work is database calls: with PostgreSQL
// frozen it answers unavailable instead of hanging. Generous, so that a large catalogue
// applies on a loaded machine.
const DefaultDeadline = 10 * time.Second

// Deadline gives every admin RPC a deadline of d (a caller's earlier one stays), except
// VerifyCapabilities, whose time goes to upstream probes with their own bounds. A database
// call cut by it is reported as unavailable (core/rpc's toStatus), so install it after
// rpc.ErrorInterceptor.
func Deadline(d time.Duration) grpc.UnaryServerInterceptor {
	prefix := "/" + adminv1.AdminService_ServiceDesc.ServiceName + "/"
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, prefix) || info.FullMethod == adminv1.AdminService_VerifyCapabilities_FullMethodName {
			return handler(ctx, req)
		}
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return handler(ctx, req)
	}
}
