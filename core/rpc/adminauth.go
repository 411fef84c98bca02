package rpc

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/wire/apierror"
)

// AdminAuth guards the admin service with the operator token, compared in constant time.
func AdminAuth(token string) grpc.UnaryServerInterceptor {
	want := []byte(token)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, "/"+adminv1.AdminService_ServiceDesc.ServiceName+"/") {
			return handler(ctx, req)
		}
		// The scheme is case-insensitive (RFC 7235); bearer() reads it so.
		got := []byte(bearer(ctx))
		if len(got) == 0 || subtle.ConstantTimeCompare(got, want) != 1 {
			return nil, apierror.New(apierror.InvalidAdminToken, "the admin token is missing or wrong")
		}
		return handler(ctx, req)
	}
}
