package rpc

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc"

	"modelgateway/core/provider"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// ErrorInterceptor is the one place where errors become statuses: spec errors keep their
// code; a database that cannot be reached is unavailable; anything else is logged and hidden
// behind internal_error, so no driver message or secret reaches a client.
func ErrorInterceptor(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err == nil {
			return resp, nil
		}
		return nil, toStatus(ctx, log, info.FullMethod, err)
	}
}

// StreamErrorInterceptor is ErrorInterceptor for streaming RPCs.
func StreamErrorInterceptor(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := handler(srv, ss); err != nil {
			return toStatus(ss.Context(), log, info.FullMethod, err)
		}
		return nil
	}
}

func toStatus(ctx context.Context, log *slog.Logger, method string, err error) error {
	var apiErr *apierror.Error
	if !errors.As(err, &apiErr) {
		switch {
		case ctx.Err() != nil:
			apiErr = apierror.New(apierror.InvalidRequest, "the request was cancelled")
		case store.Unreachable(err):
			// PostgreSQL unreachable (a cut connection, a failed connect, a timeout): the
			// contract's 503 unavailable, which a client may retry, not internal_error.
			log.WarnContext(ctx, "rpc failed: database unreachable", "method", method, "request_id", firstMD(ctx, MetadataRequestID), "err", provider.Redact(err.Error()))
			apiErr = apierror.New(apierror.Unavailable, "the gateway cannot reach its database; retry later")
		default:
			log.ErrorContext(ctx, "rpc failed", "method", method, "request_id", firstMD(ctx, MetadataRequestID), "err", provider.Redact(err.Error()))
			apiErr = apierror.New(apierror.Internal, "internal error")
		}
	}
	// Every message leaves core through here: no provider credential or key in any of them.
	if red := provider.Redact(apiErr.Message); red != apiErr.Message {
		apiErr = &apierror.Error{Code: apiErr.Code, Message: red, Status: apiErr.Status, RetryAfter: apiErr.RetryAfter}
	}
	return apistatus.ToStatus(apiErr, firstMD(ctx, MetadataRequestID))
}
