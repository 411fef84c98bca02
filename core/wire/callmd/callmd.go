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
	"reflect"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/metadata"
)

// NewIncomingContext is metadata.NewIncomingContext(ctx, md) whose values Value reads without
// a copy. md must not be modified afterwards (as for metadata.NewIncomingContext).
func NewIncomingContext(ctx context.Context, md metadata.MD) context.Context {
	if grpcIncomingKey == nil {
		return &carrier[carriedIn]{Context: metadata.NewIncomingContext(ctx, md), md: md}
	}
	return &carrier[carriedIn]{Context: ctx, md: md, grpcKey: grpcIncomingKey}
}

// NewIncomingPairs is NewIncomingContext(ctx, metadata.Pairs(kv...)) without the map: Value
// reads the pairs as they are, and a gRPC reader gets the map, made when it asks. kv are
// key, value pairs, the keys in lower case, each key once; kv must not be modified
// afterwards.
func NewIncomingPairs(ctx context.Context, kv []string) context.Context {
	if grpcIncomingKey == nil {
		md := metadata.Pairs(kv...)
		return &carrier[carriedIn]{Context: metadata.NewIncomingContext(ctx, md), md: md}
	}
	return &carrier[carriedIn]{Context: ctx, pairs: kv, grpcKey: grpcIncomingKey}
}

// NewServerContext is NewIncomingContext over ctx's deadline and cancellation without any of
// ctx's values: what the server side of an in-process call sees (the server must not depend
// on what its caller's context happens to carry). One allocation where the three contexts it
// stands for would cost three.
func NewServerContext(ctx context.Context, md metadata.MD) context.Context {
	if grpcIncomingKey == nil {
		return &carrier[carriedIn]{Context: metadata.NewIncomingContext(NoValues{ctx}, md), md: md}
	}
	return &carrier[carriedIn]{Context: ctx, md: md, grpcKey: grpcIncomingKey, noValues: true}
}

// ServerContext is NewServerContext(ctx, md) for the outgoing metadata md of ctx made by
// NewOutgoingContext or NewOutgoingPairs, carried as it was (pairs stay pairs); false when
// ctx carries none. The first server context of a Room's outgoing carrier is the Room's.
func ServerContext(ctx context.Context) (context.Context, bool) {
	out, ok := ctx.Value(carriedOut{}).(*carrier[carriedOut])
	if !ok {
		return nil, false
	}
	if grpcIncomingKey == nil {
		return NewServerContext(ctx, out.metadata()), true
	}
	var c *carrier[carriedIn]
	if r := out.room; r != nil && r.srvTaken.CompareAndSwap(false, true) {
		c = &r.srv
	} else {
		c = new(carrier[carriedIn])
	}
	*c = carrier[carriedIn]{Context: ctx, md: out.md, pairs: out.pairs, grpcKey: grpcIncomingKey, noValues: true}
	return c, true
}

// Room holds a request's first incoming and outgoing carriers, and the first server context
// of its outgoing one, in an allocation the request has anyway (the front's request state):
// the front makes each once per request (the key check's outgoing context, the call's
// incoming one), which cost an allocation apiece. Each is taken by the first call that asks
// for it; later calls make their own. A Room must not be copied.
type Room struct {
	in, srv                     carrier[carriedIn]
	out                         carrier[carriedOut]
	inTaken, outTaken, srvTaken atomic.Bool
}

// IncomingPairs is NewIncomingPairs, in the Room when its incoming carrier is not taken.
func (r *Room) IncomingPairs(ctx context.Context, kv []string) context.Context {
	if grpcIncomingKey == nil || !r.inTaken.CompareAndSwap(false, true) {
		return NewIncomingPairs(ctx, kv)
	}
	r.in = carrier[carriedIn]{Context: ctx, pairs: kv, grpcKey: grpcIncomingKey}
	return &r.in
}

// OutgoingPairs is NewOutgoingPairs, in the Room when its outgoing carrier is not taken.
func (r *Room) OutgoingPairs(ctx context.Context, kv []string) context.Context {
	if grpcOutgoingKey == nil || !r.outTaken.CompareAndSwap(false, true) {
		return NewOutgoingPairs(ctx, kv)
	}
	r.out = carrier[carriedOut]{Context: ctx, pairs: kv, outKey: grpcOutgoingKey, room: r}
	return &r.out
}

// NoValues passes a context's deadline and cancellation on, not its values. It answers
// CancelCtxKey from its parent, so that a context made under it (WithCancel, WithTimeout,
// AfterFunc) joins the parent's cancellation as under any context, rather than starting a
// goroutine of its own to watch it.
type NoValues struct{ context.Context }

func (n NoValues) Value(k any) any {
	if k == CancelCtxKey && k != nil {
		return n.Context.Value(k)
	}
	return nil
}

// CancelCtxKey is the key through which the context package finds a context's nearest
// context made by WithCancel (context.Cause, and a child's cancellation), a pointer to an
// unexported variable, learnt once; nil when learning it failed.
var CancelCtxKey = learnCancelCtxKey()

// causeSpy notes the first key Cause asks it for.
type causeSpy struct {
	context.Context
	key any
}

func (s *causeSpy) Value(k any) any {
	if s.key == nil {
		s.key = k
	}
	return nil
}

func (s *causeSpy) Err() error { return context.Canceled } // Cause looks its key up only then

// learnCancelCtxKey asks Cause of a spy which key it looks up, and proves it on a context
// made by WithCancel; nil when either fails.
func learnCancelCtxKey() any {
	s := &causeSpy{Context: context.Background()}
	_ = context.Cause(s)
	if s.key == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if ctx.Value(s.key) == nil {
		return nil
	}
	return s.key
}

// grpcIncomingKey is the key under which gRPC's metadata package keeps incoming metadata (an
// unexported type), learnt once: a carrier that answers it itself saves the context node
// metadata.NewIncomingContext would add per call. nil when learning it failed, or gRPC's
// readers did not then read a carrier's metadata as incoming metadata (a gRPC version that
// stores it otherwise): the carriers then hold gRPC's own node, as before.
var grpcIncomingKey = learnIncomingKey()

// keySpy notes the keys it is asked for.
type keySpy struct {
	context.Context
	keys []any
}

func (s *keySpy) Value(k any) any {
	s.keys = append(s.keys, k)
	return nil
}

func learnIncomingKey() any {
	spy := &keySpy{Context: context.Background()}
	metadata.FromIncomingContext(spy)
	if len(spy.keys) != 1 || spy.keys[0] == nil || !reflect.TypeOf(spy.keys[0]).Comparable() {
		return nil
	}
	key := spy.keys[0]
	// The proof: gRPC's readers find a carrier's metadata as incoming metadata, and only as that.
	md := metadata.MD{"k": {"v"}}
	c := &carrier[carriedIn]{Context: context.Background(), md: md, grpcKey: key}
	if got, ok := metadata.FromIncomingContext(c); !ok || len(got) != 1 || len(got["k"]) != 1 || got["k"][0] != "v" {
		return nil
	}
	if v := metadata.ValueFromIncomingContext(c, "k"); len(v) != 1 || v[0] != "v" {
		return nil
	}
	if _, ok := metadata.FromOutgoingContext(c); ok {
		return nil
	}
	return key
}

// NewOutgoingContext is metadata.NewOutgoingContext(ctx, md) from which Outgoing takes md
// back without a copy: the front's key check calls core in its own goroutine
// (core/rpc.DirectCore), which would otherwise copy the whole metadata to make it incoming.
// Such a context is made for one call: metadata appended over it with gRPC's functions
// would reach gRPC's readers but not Outgoing. md must not be modified afterwards.
func NewOutgoingContext(ctx context.Context, md metadata.MD) context.Context {
	if grpcOutgoingKey == nil {
		return &carrier[carriedOut]{Context: metadata.NewOutgoingContext(ctx, md), md: md}
	}
	return &carrier[carriedOut]{Context: ctx, md: md, outKey: grpcOutgoingKey}
}

// NewOutgoingPairs is NewOutgoingContext(ctx, metadata.Pairs(kv...)) without the map, as
// NewIncomingPairs is: the front's key and request id, which an in-process call hands on to
// core (ServerContext) where Value reads them, and which become a map only for a gRPC
// client's call. kv must not be modified afterwards.
func NewOutgoingPairs(ctx context.Context, kv []string) context.Context {
	if grpcOutgoingKey == nil {
		md := metadata.Pairs(kv...)
		return &carrier[carriedOut]{Context: metadata.NewOutgoingContext(ctx, md), md: md}
	}
	return &carrier[carriedOut]{Context: ctx, pairs: kv, outKey: grpcOutgoingKey}
}

// grpcOutgoingKey is the key under which gRPC's metadata package keeps outgoing metadata,
// learnt once as grpcIncomingKey is. A carrier of outgoing metadata answers it with what
// metadata.NewOutgoingContext would have stored (an unexported type), made when it is asked
// for: by a gRPC client's call, while an in-process call takes the metadata with Outgoing
// and never asks. The context node and the boxed value cost two allocations per call
// otherwise. nil when learning or the proof failed: the carriers then hold gRPC's own node.
var grpcOutgoingKey = learnOutgoingKey()

func learnOutgoingKey() any {
	spy := &keySpy{Context: context.Background()}
	metadata.FromOutgoingContext(spy)
	if len(spy.keys) != 1 || spy.keys[0] == nil || !reflect.TypeOf(spy.keys[0]).Comparable() {
		return nil
	}
	key := spy.keys[0]
	// The proof: gRPC's readers find a carrier's metadata as outgoing metadata, with what is
	// appended over it, and not as incoming metadata.
	md := metadata.MD{"k": {"v"}}
	c := &carrier[carriedOut]{Context: context.Background(), md: md, outKey: key}
	if got, ok := metadata.FromOutgoingContext(c); !ok || len(got) != 1 || len(got["k"]) != 1 || got["k"][0] != "v" {
		return nil
	}
	got, ok := metadata.FromOutgoingContext(metadata.AppendToOutgoingContext(c, "k2", "v2"))
	if !ok || len(got) != 2 || len(got["k"]) != 1 || got["k"][0] != "v" || len(got["k2"]) != 1 || got["k2"][0] != "v2" {
		return nil
	}
	if _, ok := metadata.FromIncomingContext(c); ok {
		return nil
	}
	return key
}

// The keys of the carried incoming and outgoing metadata.
type (
	carriedIn  struct{}
	carriedOut struct{}
)

// carrier answers the lookup of the metadata it carries under key K itself: one allocation,
// where context.WithValue would box the map's key and value. With grpcKey set it answers
// gRPC's lookup of incoming metadata too (grpcIncomingKey), and with noValues it hides its
// parent's values.
type carrier[K comparable] struct {
	context.Context
	md metadata.MD
	// pairs, when md is nil, is the metadata as key, value pairs (NewIncomingPairs).
	pairs    []string
	grpcKey  any
	noValues bool
	// outKey is grpcOutgoingKey on a carrier of outgoing metadata that answers gRPC's
	// lookup itself.
	outKey any
	// room is the Room of a carrier made in one, for its first server context.
	room *Room
}

func (c *carrier[K]) Value(k any) any {
	if _, ok := k.(K); ok {
		return c
	}
	// An interface comparison: false, never a panic, for a key of another type.
	if c.grpcKey != nil && k == c.grpcKey {
		return c.metadata()
	}
	if c.outKey != nil && k == c.outKey {
		return metadata.NewOutgoingContext(context.Background(), c.metadata()).Value(k)
	}
	if c.noValues {
		if k == CancelCtxKey && k != nil {
			return c.Context.Value(k)
		}
		return nil
	}
	return c.Context.Value(k)
}

// metadata is the carried metadata as gRPC's readers take it: pairs become a map of their
// own at each ask (gRPC's readers copy what they read, and the asks are a gRPC call's).
func (c *carrier[K]) metadata() metadata.MD {
	if c.md == nil && c.pairs != nil {
		return metadata.Pairs(c.pairs...)
	}
	return c.md
}

// value is the first value of key, "" without one, as Value reads it.
func (c *carrier[K]) value(key string) string {
	if c.md == nil {
		for i := 0; i+1 < len(c.pairs); i += 2 {
			if c.pairs[i] == key {
				return c.pairs[i+1]
			}
		}
		for i := 0; i+1 < len(c.pairs); i += 2 {
			if strings.EqualFold(c.pairs[i], key) {
				return c.pairs[i+1]
			}
		}
		return ""
	}
	// As metadata.ValueFromIncomingContext: the exact key, else any key equal but for case.
	v, found := c.md[key]
	if !found {
		for k, kv := range c.md {
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

// Outgoing is the metadata of a context made by NewOutgoingContext (or NewOutgoingPairs, as
// a map of its own).
func Outgoing(ctx context.Context) (metadata.MD, bool) {
	c, ok := ctx.Value(carriedOut{}).(*carrier[carriedOut])
	if !ok {
		return nil, false
	}
	return c.metadata(), true
}

// Value is the first value of key in ctx's incoming metadata, "" when there is none: what
// metadata.ValueFromIncomingContext(ctx, key)[0] is, without its copy when ctx was made by
// NewIncomingContext.
func Value(ctx context.Context, key string) string {
	c, ok := ctx.Value(carriedIn{}).(*carrier[carriedIn])
	if !ok {
		if v := metadata.ValueFromIncomingContext(ctx, key); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	return c.value(key)
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
