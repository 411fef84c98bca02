package relay

// What travels from an HTTP request to core beside the message: the key and the request id,
// as gRPC metadata.

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"
)

// IncomingContext is OutgoingContext as the server side of an in-process call sees it.
func IncomingContext(r *http.Request) context.Context {
	md, _ := metadata.FromOutgoingContext(OutgoingContext(r))
	return metadata.NewIncomingContext(r.Context(), md)
}

// OutgoingContext carries the key and request id to core as gRPC metadata.
func OutgoingContext(r *http.Request) context.Context {
	ctx := metadata.AppendToOutgoingContext(r.Context(),
		"authorization", r.Header.Get("Authorization"),
		"x-request-id", r.Header.Get("X-Request-Id"))
	if generated, _ := r.Context().Value(generatedKey{}).(bool); generated {
		ctx = metadata.AppendToOutgoingContext(ctx, "x-request-id-generated", "1")
	}
	return ctx
}

type generatedKey struct{}

// WithGeneratedID marks a request whose id the gateway made itself: core need not check such
// an id for reuse.
func WithGeneratedID(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), generatedKey{}, true))
}
