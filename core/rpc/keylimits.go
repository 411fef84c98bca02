package rpc

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
)

// KeyLimiter enforces the per-key request limits of the admin API (Key.max_concurrent_requests,
// Key.max_requests_per_second) on the RPCs that reach an upstream.
//
// Across replicas the limits hold approximately, without a shared counter on the request path:
// each replica enforces its share, the limit divided by Replicas and rounded up (never below
// one). Behind a load balancer that spreads a key's requests evenly, the key's total stays
// within the limit plus at most Replicas-1 requests of rounding; an uneven spread refuses
// early rather than letting the total through. A shared counter in PostgreSQL would be exact
// but would cost a round trip per request on every replica (design: nothing slow on the hot
// path).
type KeyLimiter struct {
	Snapshots *snapshot.Holder
	// Replicas is how many replicas share the limits (GATEWAY_REPLICAS); below 1 means 1.
	Replicas int
	// now is time.Now; tests set it.
	now func() time.Time

	mu   sync.Mutex
	keys map[uuid.UUID]*keyUse
}

type keyUse struct {
	inflight int
	tokens   float64
	at       time.Time
}

// limitedMethods are the core RPCs that count as requests of a key: everything that reaches
// an upstream (discovery and Authorize are in-memory answers and not limited).
var limitedMethods = map[string]bool{
	corev1.CoreService_Generate_FullMethodName:    true,
	corev1.CoreService_Forward_FullMethodName:     true,
	corev1.CoreService_Realtime_FullMethodName:    true,
	corev1.CoreService_Embed_FullMethodName:       true,
	corev1.CoreService_CountTokens_FullMethodName: true,
}

// share is this replica's part of a limit.
func (l *KeyLimiter) share(limit int32) float64 {
	n := max(l.Replicas, 1)
	return math.Max(1, math.Ceil(float64(limit)/float64(n)))
}

// acquire admits one request of the key, or refuses it with rate_limited; release must be
// called when an admitted request ends.
func (l *KeyLimiter) acquire(k *snapshot.Key) (release func(), _ error) {
	if k.MaxConcurrent <= 0 && k.MaxRPS <= 0 {
		return func() {}, nil
	}
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keys == nil {
		l.keys = map[uuid.UUID]*keyUse{}
	}
	u := l.keys[k.ID]
	if u == nil {
		u = &keyUse{at: now}
		if k.MaxRPS > 0 {
			u.tokens = l.share(k.MaxRPS)
		}
		l.keys[k.ID] = u
	}
	if k.MaxConcurrent > 0 && float64(u.inflight) >= l.share(k.MaxConcurrent) {
		return nil, &apierror.Error{Code: apierror.RateLimited, RetryAfter: 1,
			Message: "this API key has too many requests in flight (max_concurrent_requests)"}
	}
	if k.MaxRPS > 0 {
		rate := l.share(k.MaxRPS)
		u.tokens = math.Min(rate, u.tokens+now.Sub(u.at).Seconds()*rate)
		u.at = now
		if u.tokens < 1-1e-9 { // (a token that has come back, less rounding)
			wait := (1 - u.tokens) / rate
			return nil, &apierror.Error{Code: apierror.RateLimited, RetryAfter: int(math.Ceil(wait)),
				Message: "this API key sends too many requests per second (max_requests_per_second)"}
		}
		u.tokens--
	}
	u.inflight++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if u.inflight--; u.inflight == 0 && (k.MaxRPS <= 0 || u.tokens >= l.share(k.MaxRPS)) {
			delete(l.keys, k.ID)
		}
	}, nil
}

// admit finds the caller's key; an unknown key passes (the RPC itself refuses it).
func (l *KeyLimiter) admit(ctx context.Context, method string) (func(), error) {
	if !limitedMethods[method] {
		return func() {}, nil
	}
	k, err := l.Snapshots.Current().Authenticate(callmd.Bearer(ctx))
	if err != nil {
		return func() {}, nil
	}
	return l.acquire(k)
}

// Unary is the limiter as a unary interceptor.
func (l *KeyLimiter) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	release, err := l.admit(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	defer release()
	return handler(ctx, req)
}

// Stream is the limiter as a stream interceptor.
func (l *KeyLimiter) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	release, err := l.admit(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	defer release()
	return handler(srv, ss)
}

// ChainStream composes stream interceptors, outermost first, for the transports that take
// only one (the in-process channel, the front's in-handler streams).
func ChainStream(ics ...grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		h := handler
		for i := len(ics) - 1; i >= 0; i-- {
			ic, next := ics[i], h
			h = func(srv any, ss grpc.ServerStream) error { return ic(srv, ss, info, next) }
		}
		return h(srv, ss)
	}
}
