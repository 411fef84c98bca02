package rpc

import (
	"context"

	"google.golang.org/grpc"
)

// Chain composes unary interceptors, outermost first, for transports that take only one (the
// in-process channel); grpc.Server uses grpc.ChainUnaryInterceptor for the same list.
func Chain(ics ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		return Compose(info, handler, ics...)(ctx, req)
	}
}

// Compose is Chain around one method's handler, built once: calls through it allocate no
// closures per interceptor.
func Compose(info *grpc.UnaryServerInfo, handler grpc.UnaryHandler, ics ...grpc.UnaryServerInterceptor) grpc.UnaryHandler {
	h := handler
	for i := len(ics) - 1; i >= 0; i-- {
		ic, next := ics[i], h
		h = func(ctx context.Context, req any) (any, error) { return ic(ctx, req, info, next) }
	}
	return h
}
