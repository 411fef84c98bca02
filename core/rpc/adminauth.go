package rpc

import (
	"context"
	"crypto/subtle"
	"math"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/wire/apierror"
)

// AdminAuth guards the admin service with the operator token, compared in constant time.
// Callers over the gRPC socket are limited in their failed attempts per address (the HTTP
// front limits its own clients the same way, by their address, before calling in process).
func AdminAuth(token string) grpc.UnaryServerInterceptor {
	want := []byte(token)
	failures := &adminFailures{}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, "/"+adminv1.AdminService_ServiceDesc.ServiceName+"/") {
			return handler(ctx, req)
		}
		src := socketPeer(ctx)
		if wait := failures.wait(src, time.Now()); wait > 0 {
			return nil, &apierror.Error{Code: apierror.RateLimited, RetryAfter: int(math.Ceil(wait.Seconds())),
				Message: "too many failed admin authentications from this address; retry later"}
		}
		// The scheme is case-insensitive (RFC 7235); bearer() reads it so.
		got := []byte(bearer(ctx))
		if len(got) == 0 || subtle.ConstantTimeCompare(got, want) != 1 {
			failures.fail(src, time.Now())
			return nil, apierror.New(apierror.InvalidAdminToken, "the admin token is missing or wrong")
		}
		return handler(ctx, req)
	}
}

// socketPeer is the IP of a caller over a network socket; "" for the in-process front.
func socketPeer(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return ""
	}
	if a, ok := p.Addr.(*net.TCPAddr); ok {
		return a.IP.String()
	}
	return ""
}

// adminFailures is a token bucket of failed attempts per address: 10 at once, then one
// every 6 s; while empty, attempts are refused before the token is compared.
type adminFailures struct {
	mu sync.Mutex
	m  map[string]*failureBucket
}

type failureBucket struct {
	tokens float64
	at     time.Time
}

const (
	adminFailureBurst = 10
	adminFailureEvery = 6 * time.Second
)

func (b *failureBucket) refill(now time.Time) {
	b.tokens = min(adminFailureBurst, b.tokens+now.Sub(b.at).Seconds()/adminFailureEvery.Seconds())
	b.at = now
}

func (f *adminFailures) wait(src string, now time.Time) time.Duration {
	if src == "" {
		return 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.m[src]
	if b == nil {
		return 0
	}
	if b.refill(now); b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(adminFailureEvery))
}

func (f *adminFailures) fail(src string, now time.Time) {
	if src == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = map[string]*failureBucket{}
	}
	if len(f.m) > 10000 { // forget addresses whose buckets have filled up again
		for k, b := range f.m {
			if b.refill(now); b.tokens >= adminFailureBurst {
				delete(f.m, k)
			}
		}
	}
	b := f.m[src]
	if b == nil {
		b = &failureBucket{tokens: adminFailureBurst, at: now}
		f.m[src] = b
	}
	b.refill(now)
	b.tokens = max(0, b.tokens-1)
}
