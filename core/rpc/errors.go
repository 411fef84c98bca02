// Package rpc holds the gRPC servers of the core and admin services.
package rpc

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"modelgateway/core/provider"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
)

// Metadata keys the front and internal callers send.
const (
	MetadataAuthorization = "authorization"
	MetadataRequestID     = "x-request-id"
	// MetadataRequestIDGenerated is "1" when the front made the request id itself: such ids
	// are unique by construction and need no duplicate check.
	MetadataRequestIDGenerated = "x-request-id-generated"
)

func firstMD(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// bearer extracts the credential of an `authorization: Bearer x` metadata entry.
func bearer(ctx context.Context) string {
	v := firstMD(ctx, MetadataAuthorization)
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

// RequestID is the caller's x-request-id, or a fresh sortable one for gRPC callers that sent
// none (the HTTP front always sends one).
func RequestID(ctx context.Context) string {
	id, _ := requestID(ctx)
	return id
}

// requestID also tells whether the id was made by the gateway rather than chosen by the client.
func requestID(ctx context.Context) (string, bool) {
	if id := firstMD(ctx, MetadataRequestID); id != "" {
		return id, firstMD(ctx, MetadataRequestIDGenerated) == "1"
	}
	return uuid.Must(uuid.NewV7()).String(), true
}

// ErrorInterceptor is the one place where errors become statuses: spec errors keep their
// code; anything else is logged and hidden behind internal_error, so no driver message or
// secret reaches a client.
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
		if ctx.Err() != nil {
			apiErr = apierror.New(apierror.InvalidRequest, "the request was cancelled")
		} else {
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
