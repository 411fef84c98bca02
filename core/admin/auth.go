package admin

import (
	"context"
	"crypto/sha256"
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
	"modelgateway/core/wire/callmd"
)

// Auth guards the admin service with the operator token. The right token always passes,
// whatever failed before from any address: behind an ingress every client shares one
// address, and a guesser there must not lock the operator out. Wrong tokens from a gRPC
// socket are throttled per address (the HTTP front throttles its clients the same way, by
// their address, when the in-process call comes back unauthenticated): past the burst they
// are answered 429 with Retry-After instead of 401. Since the right token is compared even
// then, what stops guessing is the token's length, not the throttle.
func Auth(token string) grpc.UnaryServerInterceptor {
	failures := &adminFailures{}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !strings.HasPrefix(info.FullMethod, "/"+adminv1.AdminService_ServiceDesc.ServiceName+"/") {
			return handler(ctx, req)
		}
		// The scheme is case-insensitive (RFC 7235); callmd.Bearer reads it so.
		if TokenMatches(callmd.Bearer(ctx), token) {
			return handler(ctx, req)
		}
		if wait := failures.fail(socketPeer(ctx), time.Now()); wait > 0 {
			return nil, Throttled(wait)
		}
		return nil, apierror.New(apierror.InvalidAdminToken, "the admin token is missing or wrong")
	}
}

// TokenMatches compares a presented admin token with the configured one in time that
// depends on neither: both are hashed first, because subtle.ConstantTimeCompare returns at
// once on a length mismatch and would tell a guesser the token's length.
func TokenMatches(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

// Throttled is the answer to a wrong admin token from an address past its burst.
func Throttled(wait time.Duration) *apierror.Error {
	return &apierror.Error{Code: apierror.RateLimited, RetryAfter: int(math.Ceil(wait.Seconds())),
		Message: "too many failed admin authentications from this address; retry later"}
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
// every 6 s. It only decides how a wrong token is answered; it never stops a right one.
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

// fail records a failed attempt from src and returns 0 while src is within its burst, else
// how long until its bucket has a token again. The in-process front (src "") is not counted
// here: it counts its own clients by their address.
func (f *adminFailures) fail(src string, now time.Time) time.Duration {
	if src == "" {
		return 0
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
	if b.refill(now); b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(adminFailureEvery))
}
