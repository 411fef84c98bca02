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
	return metadata.NewIncomingContext(r.Context(), requestMD(r))
}

// OutgoingContext carries the key and request id to core as gRPC metadata.
func OutgoingContext(r *http.Request) context.Context {
	return metadata.NewOutgoingContext(r.Context(), requestMD(r))
}

// requestMD is the metadata of a request, built at once: appending pairs to a context
// (metadata.AppendToOutgoingContext) copies them again for every reader.
func requestMD(r *http.Request) metadata.MD {
	md := metadata.MD{
		"authorization": {r.Header.Get("Authorization")},
		"x-request-id":  {r.Header.Get("X-Request-Id")},
	}
	if generated, _ := r.Context().Value(generatedKey{}).(bool); generated {
		md["x-request-id-generated"] = []string{"1"}
	}
	return md
}

type generatedKey struct{}

// WithGeneratedID marks a request whose id the gateway made itself: core need not check such
// an id for reuse.
func WithGeneratedID(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), generatedKey{}, true))
}
