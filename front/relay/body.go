package relay

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"modelgateway/core/wire/apierror"
)

// Budget bounds the bytes of request bodies a replica holds in memory at once, in total and
// per key: a body is buffered whole before it is decoded, so without it a few stalled uploads
// of an ordinary key (or many keys) can hold gigabytes. A body is charged against the budget
// before its memory is allocated: its declared Content-Length at once, a body of unknown
// length as its buffer grows. What does not fit is refused with rate_limited, unread.
type Budget struct {
	// Total is the replica's bound; PerKey the bound of one key. 0 means unbounded.
	Total, PerKey int64

	mu    sync.Mutex
	used  int64
	byKey map[string]int64
}

// Lease is one request's share of the budget; Release returns it.
type Lease struct {
	b   *Budget
	key string
	n   int64
}

// Lease starts an empty lease for the key (any stable identity of it, e.g. its id).
func (b *Budget) Lease(key string) *Lease { return &Lease{b: b, key: key} }

// Used is the replica's bytes in flight (for tests and metrics).
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// grow takes n more bytes for the lease, or refuses without taking anything.
func (l *Lease) grow(n int64) *apierror.Error {
	if l == nil || l.b == nil || n <= 0 {
		return nil
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Total > 0 && b.used+n > b.Total {
		return apierror.New(apierror.RateLimited, "this replica is reading too many request bodies at once; retry shortly")
	}
	if b.PerKey > 0 && b.byKey[l.key]+n > b.PerKey {
		return apierror.New(apierror.RateLimited, "this API key has more than %d bytes of request bodies in flight; retry shortly", b.PerKey)
	}
	if b.byKey == nil {
		b.byKey = map[string]int64{}
	}
	b.used += n
	b.byKey[l.key] += n
	l.n += n
	return nil
}

// Release returns everything the lease took; a nil lease is fine.
func (l *Lease) Release() {
	if l == nil || l.b == nil || l.n == 0 {
		return
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= l.n
	if b.byKey[l.key] -= l.n; b.byKey[l.key] <= 0 {
		delete(b.byKey, l.key)
	}
	l.n = 0
}

type leaseKey struct{}

// WithLease attaches a new lease of the budget for the key to the request; ReadBody charges
// the body to it. A request that went through Begin keeps the lease in its state, without a
// copy of the request.
func WithLease(r *http.Request, b *Budget, key string) (*http.Request, *Lease) {
	if s := stateOf(r); s != nil && !s.leased {
		s.lease, s.leased = Lease{b: b, key: key}, true
		return r, &s.lease
	}
	l := b.Lease(key)
	return r.WithContext(context.WithValue(r.Context(), leaseKey{}, l)), l
}

func leaseOf(r *http.Request) *Lease {
	l, _ := r.Context().Value(leaseKey{}).(*Lease)
	return l
}

// ReadBody reads at most limit bytes; a larger body is payload_too_large, decided while
// reading (a lying or absent Content-Length does not help). The buffer is never larger than
// the declared length (Go's server ends the body there) and every byte of it is charged to
// the request's lease before it is allocated.
func ReadBody(r *http.Request, limit int64) ([]byte, *apierror.Error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	lease := leaseOf(r)
	var size int64
	switch {
	case r.ContentLength == 0 && (r.Body == nil || r.Body == http.NoBody):
		return []byte{}, nil
	case r.ContentLength == 0: // a request built without its length: read as unknown
		size = 16 << 10
	case r.ContentLength > 0:
		size = r.ContentLength
	default:
		size = 16 << 10
	}
	if err := lease.grow(size + 1); err != nil {
		return nil, err
	}
	buf := make([]byte, 0, size+1) // +1: the read that sees the end needs room
	lr := &io.LimitedReader{R: r.Body, N: limit + 1}
	for {
		if len(buf) == cap(buf) {
			// Only a body of unknown length gets here: grow by doubling, charged first.
			next := min(2*int64(cap(buf)), limit+1)
			if err := lease.grow(next - int64(cap(buf))); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			buf = grown
		}
		n, err := lr.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var ae *apierror.Error
			if errors.As(err, &ae) {
				return nil, ae
			}
			return nil, apierror.New(apierror.InvalidRequest, "reading the request body: %v", err)
		}
	}
	if int64(len(buf)) > limit {
		return nil, tooLarge(limit)
	}
	return buf, nil
}

func tooLarge(limit int64) *apierror.Error {
	return apierror.New(apierror.PayloadTooLarge, "the request body is larger than %s bytes", strconv.FormatInt(limit, 10))
}
