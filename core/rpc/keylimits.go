package rpc

import (
	"context"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/callmd"
)

// KeyLimiter enforces the per-key limits of the admin API (Key.max_concurrent_requests,
// Key.max_requests_per_second on the RPCs that reach an upstream; Key.max_tokens_per_minute
// on the generations, embeddings, forwarded requests and realtime responses, through
// countTokens).
//
// Across replicas the limits hold approximately, without a shared counter on the request path:
// each replica enforces its share, the limit divided by the number of live replicas (the
// replicas table, which every replica reports to each second: billing.Ledger.LiveReplicas), so
// the shares follow replicas starting and stopping without configuration. Rates are divided
// exactly (a key limited to 10 requests per second gets 3.33 per second on each of three
// replicas), so behind a load balancer that spreads a key's requests evenly its total is the
// limit; an uneven spread refuses early rather than letting the total through. Concurrency is
// divided rounding up (a request is whole), so the total may pass the limit by at most
// replicas-1. A shared counter in PostgreSQL would be exact but would cost a round trip per
// request on every replica (design: nothing slow on the hot path).
type KeyLimiter struct {
	Snapshots *snapshot.Holder
	// Replicas, when above 0, is how many replicas share the limits (GATEWAY_REPLICAS, an
	// override); otherwise Live says.
	Replicas int
	// Live is the number of live replicas recorded in the database; nil or below 1 means 1.
	Live func() int
	// now is time.Now; tests set it.
	now func() time.Time

	mu   sync.Mutex
	keys map[uuid.UUID]*keyUse
}

// keyUse is what this replica has admitted of one key.
type keyUse struct {
	inflight int
	// tokens is the request-rate bucket: requests that may start now (refilled at the rate,
	// up to one second's worth).
	tokens float64
	at     time.Time
	// window counts the key's tokens of the rolling minute (max_tokens_per_minute).
	window tokenWindow
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

// replicas is how many replicas share each limit now.
func (l *KeyLimiter) replicas() int {
	if l.Replicas > 0 {
		return l.Replicas
	}
	if l.Live != nil {
		if n := l.Live(); n > 0 {
			return n
		}
	}
	return 1
}

// share is this replica's part of a rate limit: exact, but never below one (a request or a
// token is whole, and a share below one would refuse everything).
func (l *KeyLimiter) share(limit int32) float64 {
	return math.Max(1, float64(limit)/float64(l.replicas()))
}

// concurrentShare is this replica's part of a concurrency limit, rounded up.
func (l *KeyLimiter) concurrentShare(limit int32) int {
	n := l.replicas()
	return max(1, (int(limit)+n-1)/n)
}

func (l *KeyLimiter) clock() time.Time {
	if l.now != nil {
		return l.now()
	}
	return time.Now()
}

func limited(k *snapshot.Key) bool { return k.MaxConcurrent > 0 || k.MaxRPS > 0 || k.MaxTPM > 0 }

// use is the key's entry, made when missing; l.mu must be held.
func (l *KeyLimiter) use(k *snapshot.Key, now time.Time) *keyUse {
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
	return u
}

// refill brings the request bucket to now; l.mu must be held.
func (u *keyUse) refill(rate float64, now time.Time) {
	u.tokens = math.Min(rate, u.tokens+now.Sub(u.at).Seconds()*rate)
	u.at = now
}

// acquire admits one request of the key, or refuses it with rate_limited; release must be
// called when an admitted request ends. md is the request-limit headers, refusal or not.
func (l *KeyLimiter) acquire(k *snapshot.Key) (release func(), md metadata.MD, _ error) {
	if !limited(k) {
		return func() {}, nil, nil
	}
	now := l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.use(k, now)
	var rate float64
	if k.MaxRPS > 0 {
		rate = l.share(k.MaxRPS)
		u.refill(rate, now)
	}
	if k.MaxConcurrent > 0 && u.inflight >= l.concurrentShare(k.MaxConcurrent) {
		return nil, requestHeaders(k, u, rate), &apierror.Error{Code: apierror.RateLimited, RetryAfter: 1,
			Message: "this API key has too many requests in flight (max_concurrent_requests)"}
	}
	if k.MaxRPS > 0 {
		if u.tokens < 1-1e-9 { // (a token that has come back, less rounding)
			wait := (1 - u.tokens) / rate
			return nil, requestHeaders(k, u, rate), &apierror.Error{Code: apierror.RateLimited, RetryAfter: int(math.Ceil(wait)),
				Message: "this API key sends too many requests per second (max_requests_per_second)"}
		}
		u.tokens--
	}
	u.inflight++
	md = requestHeaders(k, u, rate)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		u.inflight--
		l.forgetIdle(k, u, l.clock())
	}, md, nil
}

// forgetIdle drops the entry of a key with nothing in flight, a full bucket and an empty
// minute: it would be made again as it is. l.mu must be held.
func (l *KeyLimiter) forgetIdle(k *snapshot.Key, u *keyUse, now time.Time) {
	if u.inflight > 0 || l.keys[k.ID] != u {
		return
	}
	if k.MaxRPS > 0 && u.tokens+now.Sub(u.at).Seconds()*l.share(k.MaxRPS) < l.share(k.MaxRPS) {
		return
	}
	if u.window.sum(now.Unix()) > 0 {
		return
	}
	delete(l.keys, k.ID)
}

// requestHeaders are the -requests headers of a key with a request rate: its limit, what
// this replica has left of its share after this request, and when the share is whole again.
func requestHeaders(k *snapshot.Key, u *keyUse, rate float64) metadata.MD {
	if k.MaxRPS <= 0 {
		return nil
	}
	reset := time.Duration((rate - u.tokens) / rate * float64(time.Second))
	return metadata.MD{
		callmd.RateLimitLimitRequests:     {strconv.Itoa(int(k.MaxRPS))},
		callmd.RateLimitRemainingRequests: {strconv.Itoa(int(math.Floor(u.tokens + 1e-9)))},
		callmd.RateLimitResetRequests:     {formatReset(reset)},
	}
}

// formatReset writes a reset time as OpenAI does, a Go duration ("1s", "6m0s", "20ms"): whole
// milliseconds, or whole seconds from a second up.
func formatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if d >= time.Second {
		return d.Round(time.Second).String()
	}
	return d.Round(time.Millisecond).String()
}

// tokenWindow counts a key's tokens of the rolling minute, by second: slot i holds the tokens
// admitted (and corrected) in second at[i]; a slot older than a minute counts nothing.
type tokenWindow struct {
	at   [windowSeconds]int64
	used [windowSeconds]int64
}

const windowSeconds = 60

// sum is the tokens of the minute up to second now.
func (w *tokenWindow) sum(now int64) int64 {
	var total int64
	for i := range w.used {
		if w.at[i] > now-windowSeconds {
			total += w.used[i]
		}
	}
	return total
}

// add counts n tokens in second sec (n < 0: a correction down, never below 0).
func (w *tokenWindow) add(sec, n int64) {
	i := sec % windowSeconds
	if w.at[i] != sec {
		w.at[i], w.used[i] = sec, 0
	}
	w.used[i] = max(0, w.used[i]+n)
}

// freeIn is how many seconds from now until the minute's count drops to at most room, and
// when it is empty.
func (w *tokenWindow) freeIn(now, room int64) (fits, empty int64) {
	total := w.sum(now)
	fits = -1
	for age := int64(windowSeconds - 1); age >= 0; age-- { // oldest second first
		sec := now - age
		if i := sec % windowSeconds; w.at[i] == sec && w.used[i] > 0 {
			total -= w.used[i]
			empty = windowSeconds - age
			if fits < 0 && total <= room {
				fits = empty
			}
		}
	}
	return max(fits, 0), empty
}

// tokenCount is one request's tokens counted against its key's token limit; settle corrects
// them to the reported usage.
type tokenCount struct {
	l   *KeyLimiter
	k   *snapshot.Key
	u   *keyUse
	sec int64
	n   int64
}

// countTokens counts a request's worst case, n input + output tokens, against the key's
// max_tokens_per_minute: rate_limited when the share of this replica has no room for it in
// the rolling minute. A request larger than the whole share is admitted into an empty minute
// (it could never be admitted otherwise) and counts the share. md is the -tokens headers,
// refusal or not; nil, nil without a token limit.
func (l *KeyLimiter) countTokens(k *snapshot.Key, n int64) (*tokenCount, metadata.MD, error) {
	if k.MaxTPM <= 0 || l == nil {
		return nil, nil, nil
	}
	now := l.clock()
	sec := now.Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.use(k, now)
	share := int64(math.Floor(l.share(k.MaxTPM)))
	n = min(max(n, 1), share)
	used := u.window.sum(sec)
	if used+n > share {
		fits, _ := u.window.freeIn(sec, share-n)
		md := tokenHeaders(k, u, sec, share)
		l.forgetIdle(k, u, now)
		return nil, md, &apierror.Error{Code: apierror.RateLimited, RetryAfter: int(max(fits, 1)),
			Message: "this API key uses too many tokens per minute (max_tokens_per_minute)"}
	}
	u.window.add(sec, n)
	return &tokenCount{l: l, k: k, u: u, sec: sec, n: n}, tokenHeaders(k, u, sec, share), nil
}

// settle corrects the count to the tokens the answer used: less than counted gives the rest
// back to the second it was counted in (while that is in the minute), more counts the excess
// now.
func (c *tokenCount) settle(used int64) {
	if c == nil {
		return
	}
	now := c.l.clock()
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	switch d := used - c.n; {
	case d > 0:
		c.u.window.add(now.Unix(), d)
	case d < 0 && c.sec > now.Unix()-windowSeconds:
		c.u.window.add(c.sec, d)
	}
	c.n = used
	c.l.forgetIdle(c.k, c.u, now)
}

// tokenHeaders are the -tokens headers: the key's limit, what this replica has left of its
// share of the minute, and when the minute's count is empty again.
func tokenHeaders(k *snapshot.Key, u *keyUse, sec, share int64) metadata.MD {
	_, empty := u.window.freeIn(sec, 0)
	return metadata.MD{
		callmd.RateLimitLimitTokens:     {strconv.Itoa(int(k.MaxTPM))},
		callmd.RateLimitRemainingTokens: {strconv.FormatInt(max(0, share-u.window.sum(sec)), 10)},
		callmd.RateLimitResetTokens:     {formatReset(time.Duration(empty) * time.Second)},
	}
}

// admit finds the caller's key; an unknown key passes (the RPC itself refuses it).
func (l *KeyLimiter) admit(ctx context.Context, method string) (func(), metadata.MD, error) {
	release, md, _, err := l.admitCaller(ctx, method)
	return release, md, err
}

// admitCaller is admit that also tells the key it found and the snapshot it found it in,
// which the RPC may take instead of authenticating the key again (InProcess); none when the
// method is not limited or the key is not valid.
func (l *KeyLimiter) admitCaller(ctx context.Context, method string) (func(), metadata.MD, authenticated, error) {
	if !limitedMethods[method] {
		return func() {}, nil, authenticated{}, nil
	}
	snap := l.Snapshots.Current()
	k, err := authenticate(snap, callmd.Bearer(ctx))
	if err != nil {
		return func() {}, nil, authenticated{}, nil
	}
	release, md, aerr := l.acquire(k)
	return release, md, authenticated{snap: snap, k: k}, aerr
}

// Unary is the limiter as a unary interceptor.
func (l *KeyLimiter) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	release, md, err := l.admit(ctx, info.FullMethod)
	if md != nil {
		_ = grpc.SetHeader(ctx, md) // (merged with what the handler adds)
	}
	if err != nil {
		return nil, err
	}
	defer release()
	return handler(ctx, req)
}

// Stream is the limiter as a stream interceptor.
func (l *KeyLimiter) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	release, md, err := l.admit(ss.Context(), info.FullMethod)
	if md != nil {
		_ = ss.SetHeader(md)
	}
	if err != nil {
		return err
	}
	defer release()
	return handler(srv, ss)
}

// ChainStream composes stream interceptors, outermost first, for the transports that take
// only one (the in-process channel, the front's in-handler streams). The outermost is called
// directly: only the inner ones need a handler made per call (one allocation each).
func ChainStream(ics ...grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	if len(ics) == 0 {
		return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			return handler(srv, ss)
		}
	}
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		h := handler
		for i := len(ics) - 1; i > 0; i-- {
			ic, next := ics[i], h
			h = func(srv any, ss grpc.ServerStream) error { return ic(srv, ss, info, next) }
		}
		return ics[0](srv, ss, info, h)
	}
}
