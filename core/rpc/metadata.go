package rpc

// Metadata: what the front and internal callers send beside a request (the key, the request
// id), and what a caller over the socket may not send.

import (
	"context"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/callmd"
	"modelgateway/core/wire/requestid"
)

// Metadata keys the front and internal callers send.
const (
	MetadataAuthorization = callmd.Authorization
	MetadataRequestID     = "x-request-id"
	// MetadataRequestIDGenerated is "1" when the front made the request id itself: such ids
	// (of the gateway's form, which no client may send) are unique by construction and need
	// no duplicate check.
	MetadataRequestIDGenerated = "x-request-id-generated"
)

// firstMD reads one key without copying the whole metadata (FromIncomingContext copies
// every key and value on each call; this runs several times per request), and without even
// the value's copy for in-process calls (core/wire/callmd).
func firstMD(ctx context.Context, key string) string { return callmd.Value(ctx, key) }

// RequestID is the caller's x-request-id, or a fresh sortable one for gRPC callers that sent
// none (the HTTP front always sends one).
func RequestID(ctx context.Context) string {
	id, _, _ := requestID(ctx)
	return id
}

// requestID also tells whether the id was made by the gateway rather than chosen by the
// client, and refuses a client id outside the form the HTTP front accepts (1 to 200 visible
// ASCII characters, not starting with requestid.Prefix in any case). The gateway's ids have
// that prefix, and the ids it derives (a realtime response's record) contain spaces, so no
// client, over HTTP or over the gRPC listener, can send one as its own: a gateway id needs no
// reservation, and a client id can never meet one.
func requestID(ctx context.Context) (string, bool, *apierror.Error) {
	id := firstMD(ctx, MetadataRequestID)
	if id == "" {
		return requestid.New(), true, nil
	}
	if firstMD(ctx, MetadataRequestIDGenerated) == "1" && requestid.Gateway(id) {
		return id, true, nil
	}
	if e := requestid.CheckClient(id); e != nil {
		return id, false, e
	}
	return id, false, nil
}

// internalMetadata is metadata only the in-process front may send.
var internalMetadata = []string{MetadataRequestIDGenerated}

// untrusted drops internal metadata from what a caller over the socket sent: such callers are
// clients like any other, and may not, say, skip the request id's reuse check.
func untrusted(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	found := false
	for _, k := range internalMetadata {
		if len(md.Get(k)) > 0 {
			found = true
		}
	}
	if !found {
		return ctx
	}
	md = md.Copy()
	for _, k := range internalMetadata {
		md.Delete(k)
	}
	return metadata.NewIncomingContext(ctx, md)
}

// ExternalUnary is the first interceptor of the gRPC listener: see untrusted.
func ExternalUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx = untrusted(ctx)
	if e := checkExternal(req); e != nil { // external.go
		return nil, apistatus.ToStatus(e, RequestID(ctx))
	}
	return handler(ctx, req)
}

// ExternalStream is ExternalUnary for streaming RPCs: its messages are checked as they are
// read (externalStream.RecvMsg).
func ExternalStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, &externalStream{ServerStream: ss, ctx: untrusted(ss.Context())})
}

type externalStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *externalStream) Context() context.Context { return s.ctx }

// takeRequestID takes a client's request id for a request refused after its key passed, so
// that it cannot be used again (admit takes the ids of the requests it admits). A database
// that cannot be reached leaves the id free: the refusal it comes with stands either way.
func (s *CoreServer) takeRequestID(ctx context.Context) error {
	id, generated, idErr := requestID(ctx)
	if idErr != nil {
		return idErr
	}
	if generated {
		return nil
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.Deps.Ledger.DBTimeout)
	defer cancel()
	if err := s.Store.TakeRequestID(dctx, id); err != nil {
		slog.Warn("taking a refused request's id", "request_id", id, "err", err)
	}
	return nil
}
