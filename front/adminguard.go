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

// serveAdmin runs an admin route behind the failed-authentication limit of its client.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	if s.adminMux == nil {
		relay.WriteError(w, r, apierror.New(apierror.NotFound, "the admin API is disabled: GATEWAY_ADMIN_TOKEN is not set"))
		return
	}
	src := clientHost(r.RemoteAddr)
	if wait := s.adminFailures.wait(src, time.Now()); wait > 0 {
		relay.WriteError(w, r, &apierror.Error{Code: apierror.RateLimited, RetryAfter: int(math.Ceil(wait.Seconds())),
			Message: "too many failed admin authentications from this address; retry later"})
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
	rec := &statusRecorder{ResponseWriter: w}
	s.adminMux.ServeHTTP(rec, r)
	if rec.status == http.StatusUnauthorized {
		s.adminFailures.fail(src, time.Now())
	}
}

func clientHost(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// failureLimiter is a token bucket of failed authentications per client address: Burst
// failures at once, then one more every Every. While a client's bucket is empty its attempts
// are refused before the token is compared, so guessing runs at one try per Every at best;
// other addresses, the operator's among them, are unaffected.
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

// wait is how long src must wait before its next attempt; 0: go ahead.
func (l *failureLimiter) wait(src string, now time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[src]
	if b == nil {
		return 0
	}
	l.refill(b, now)
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(l.Every))
}

// fail spends one of src's tokens.
func (l *failureLimiter) fail(src string, now time.Time) {
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
	l.refill(b, now)
	b.tokens = max(0, b.tokens-1)
}
