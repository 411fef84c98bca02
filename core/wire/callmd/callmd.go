// Package callmd carries the metadata of an in-process call (the front's key and request id,
// as core reads them) so that core can read a value without a copy: gRPC's
// metadata.ValueFromIncomingContext copies the value it returns, and core reads the key and
// the request id several times per request. The metadata is still set as gRPC's incoming
// metadata as well, for everything that reads it the usual way.
//
// Only NewIncomingContext (NewOutgoingContext) puts the carried metadata in a context,
// together with gRPC's incoming (outgoing) metadata, so the two agree. Contexts that cross a
// call boundary (the in-process channel, the gRPC listener, core's own in-process calls) keep
// no values of the caller's, so a callee never reads its caller's metadata; and gRPC metadata
// set over a context of this package's (only the listener's filter does that, on contexts
// that never carry one) would not be seen by Value.
package callmd

import (
	"context"
	"strings"

	"google.golang.org/grpc/metadata"
)

// NewIncomingContext is metadata.NewIncomingContext(ctx, md) whose values Value reads without
// a copy. md must not be modified afterwards (as for metadata.NewIncomingContext).
func NewIncomingContext(ctx context.Context, md metadata.MD) context.Context {
	return &carrier[carriedIn]{Context: metadata.NewIncomingContext(ctx, md), md: md}
}

// NewOutgoingContext is metadata.NewOutgoingContext(ctx, md) from which Outgoing takes md
// back without a copy: the front's key check calls core in its own goroutine
// (core/rpc.DirectCore), which would otherwise copy the whole metadata to make it incoming.
// Such a context is made for one call: metadata appended over it with gRPC's functions
// would reach gRPC's readers but not Outgoing. md must not be modified afterwards.
func NewOutgoingContext(ctx context.Context, md metadata.MD) context.Context {
	return &carrier[carriedOut]{Context: metadata.NewOutgoingContext(ctx, md), md: md}
}

// The keys of the carried incoming and outgoing metadata.
type (
	carriedIn  struct{}
	carriedOut struct{}
)

// carrier answers the lookup of the metadata it carries under key K itself: one allocation,
// where context.WithValue would box the map's key and value.
type carrier[K comparable] struct {
	context.Context
	md metadata.MD
}

func (c *carrier[K]) Value(k any) any {
	if _, ok := k.(K); ok {
		return c.md
	}
	return c.Context.Value(k)
}

// Outgoing is the metadata of a context made by NewOutgoingContext.
func Outgoing(ctx context.Context) (metadata.MD, bool) {
	md, ok := ctx.Value(carriedOut{}).(metadata.MD)
	return md, ok
}

// Value is the first value of key in ctx's incoming metadata, "" when there is none: what
// metadata.ValueFromIncomingContext(ctx, key)[0] is, without its copy when ctx was made by
// NewIncomingContext.
func Value(ctx context.Context, key string) string {
	md, ok := ctx.Value(carriedIn{}).(metadata.MD)
	if !ok {
		if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	// As metadata.ValueFromIncomingContext: the exact key, else any key equal but for case.
	v, found := md[key]
	if !found {
		for k, kv := range md {
			if strings.EqualFold(k, key) {
				v = kv
				break
			}
		}
	}
	if len(v) > 0 {
		return v[0]
	}
	return ""
}

// Authorization is the metadata key of the caller's credential, `authorization: Bearer x`.
const Authorization = "authorization"

// Bearer is the credential of ctx's `authorization: Bearer x` entry, "" without one. The
// scheme is case-insensitive (RFC 7235). Core's request path reads the key with it, and the
// admin service its operator token: both read the one entry the same way.
func Bearer(ctx context.Context) string {
	v := Value(ctx, Authorization)
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}
