package front

import (
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/requestid"
	"modelgateway/front/relay"
)

// AdminHandler serves the admin routes alone (and the health probes), for a listener of their
// own (GATEWAY_ADMIN_HTTP_ADDR); with Config.AdminSeparate the client listener then has none.
func (s *Server) AdminHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSpace(r.Header.Get("X-Request-Id"))
		if id == "" {
			id = requestid.New()
			r = relay.WithGeneratedID(r)
		} else if apiErr := requestid.CheckClient(id); apiErr != nil {
			r.Header.Set("X-Request-Id", requestid.New())
			w.Header().Set("X-Request-Id", r.Header.Get("X-Request-Id"))
			relay.WriteError(w, r, apiErr)
			return
		}
		r.Header.Set("X-Request-Id", id)
		w.Header().Set("X-Request-Id", id)
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/admin/v1/"):
			s.serveAdmin(w, r)
		case p == "/healthz":
			s.onlyGET(w, r, s.healthz)
		case p == "/readyz":
			s.onlyGET(w, r, s.readyz)
		default:
			relay.WriteError(w, r, apierror.New(apierror.NotFound, "no route for %s %s", r.Method, p))
		}
	})
}

// serveAdmin runs an admin route. The token is compared first (Config.AdminTokenOK, then
// again by core's admin service, core/admin's Auth), whatever this client's failures so far: the
// right token always passes, even from an address a guesser shares with the operator behind
// an ingress. Only a wrong token is counted against the client's address
// (throttleAdminFailure).
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if s.adminMux == nil {
		relay.WriteError(w, r, apierror.New(apierror.NotFound, "the admin API is disabled: GATEWAY_ADMIN_TOKEN is not set"))
		return
	}
	// A wrong token costs no body: up to maxAdminBody would otherwise be read and decoded for
	// every attempt, throttled or not, before core's check refuses it.
	if ok := s.cfg.AdminTokenOK; ok != nil && !ok(bearerToken(r)) {
		relay.WriteError(w, r, s.throttleAdminFailure(r, apierror.New(apierror.InvalidAdminToken, "the admin token is missing or wrong")))
		return
	}
	if r.ContentLength > maxAdminBody {
		relay.WriteError(w, r, apierror.New(apierror.PayloadTooLarge, "the request body is larger than %d bytes", maxAdminBody))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxAdminBody)
	if r.URL.Path == "/admin/v1/catalog:apply" && isYAML(r.Header.Get("Content-Type")) {
		if err := yamlToJSON(r); err != nil {
			relay.WriteError(w, r, apierror.New(apierror.InvalidRequest, "catalog document: %v", err))
			return
		}
	}
	s.adminMux.ServeHTTP(w, r)
}

// throttleAdminFailure is the admin mux's error mapping: a wrong or missing token counts
// against the client's address, and past the address's burst it is answered 429 with
// Retry-After instead of 401.
func (s *Server) throttleAdminFailure(r *http.Request, e *apierror.Error) *apierror.Error {
	if e.Code != apierror.InvalidAdminToken {
		return e
	}
	if wait := s.adminFailures.fail(clientHost(r.RemoteAddr), time.Now()); wait > 0 {
		return &apierror.Error{Code: apierror.RateLimited, RetryAfter: int(math.Ceil(wait.Seconds())),
			Message: "too many failed admin authentications from this address; retry later"}
	}
	return e
}

// bearerToken is the request's bearer token; the scheme is case-insensitive (RFC 7235), as
// core reads it (rpc's bearer).
func bearerToken(r *http.Request) string {
	v := r.Header.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return ""
}

func clientHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// failureLimiter is a token bucket of failed authentications per client address: Burst
// failures at once, then one more every Every. It decides only how a wrong token is answered
// (401 within the burst, 429 past it); a right token is never refused, so what stops a
// guesser is the token's length.
type failureLimiter struct {
	Burst float64
	Every time.Duration

	mu sync.Mutex
	m  map[string]*failBucket
}

type failBucket struct {
	tokens float64
	at     time.Time
}

const (
	adminFailureBurst = 10
	adminFailureEvery = 6 * time.Second
)

func (l *failureLimiter) refill(b *failBucket, now time.Time) {
	b.tokens = min(l.Burst, b.tokens+now.Sub(b.at).Seconds()/l.Every.Seconds())
	b.at = now
}

// fail records a failure of src: 0 while src is within its burst, else how long until its
// bucket has a token again.
func (l *failureLimiter) fail(src string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*failBucket{}
	}
	if len(l.m) > 10000 { // forget the addresses whose buckets have filled up again
		for k, b := range l.m {
			if l.refill(b, now); b.tokens >= l.Burst {
				delete(l.m, k)
			}
		}
	}
	b := l.m[src]
	if b == nil {
		b = &failBucket{tokens: l.Burst, at: now}
		l.m[src] = b
	}
	if l.refill(b, now); b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.Every))
}
