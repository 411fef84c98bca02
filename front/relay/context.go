package relay

// What travels from an HTTP request to core beside the message: the key and the request id,
// as gRPC metadata.

import (
	"context"
	"net/http"

	"google.golang.org/grpc/metadata"

	"modelgateway/core/wire/callmd"
)

// IncomingContext is OutgoingContext as the server side of an in-process call sees it, with
// the metadata where core reads it without copies (core/wire/callmd).
func IncomingContext(r *http.Request) context.Context {
	return callmd.NewIncomingContext(r.Context(), requestMD(r))
}

// OutgoingContext carries the key and request id to core as gRPC metadata; a direct call
// (the key check) takes them back without a copy (core/wire/callmd).
func OutgoingContext(r *http.Request) context.Context {
	return callmd.NewOutgoingContext(r.Context(), requestMD(r))
}

// requestMD is the metadata of a request, built at once: appending pairs to a context
// (metadata.AppendToOutgoingContext) copies them again for every reader.
// The values share one backing array, and the generated flag's value is one slice for every
// request: metadata readers copy what they read (metadata.ValueFromIncomingContext) and never
// write into a value, and each slice's capacity is its length, so an append copies it.
func requestMD(r *http.Request) metadata.MD {
	v := [...]string{r.Header.Get("Authorization"), r.Header.Get("X-Request-Id")}
	md := metadata.MD{
		"authorization": v[0:1:1],
		"x-request-id":  v[1:2:2],
	}
	if generated, _ := r.Context().Value(generatedKey{}).(bool); generated {
		md["x-request-id-generated"] = valueGenerated
	}
	return md
}

var valueGenerated = []string{"1"}

type generatedKey struct{}

// WithGeneratedID marks a request whose id the gateway made itself: core need not check such
// an id for reuse.
func WithGeneratedID(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), generatedKey{}, true))
}
