package relay

import (
	"context"
	"errors"
	"io"
	"math/bits"
	"net/http"
	"strconv"
	"sync"

	"modelgateway/core/wire/apierror"
)

// Budget bounds the bytes of request bodies a replica holds in memory at once: in total, per
// key and per profile. A body is buffered whole before it is decoded, so without it a few
// stalled uploads of an ordinary key (or many keys) can hold gigabytes. A body is charged as
// its bytes arrive, before the memory that holds them is allocated: its buffer grows in
// chunks (doubling, from ReadChunk, never past the declared length or the route's limit),
// and each growth is charged first. A declared Content-Length alone takes nothing, so a slow
// upload holds what it has sent (at most twice that, and a chunk), not what it promises; and
// the per-profile bound keeps one profile, however many keys it has, from holding the share
// every other profile needs. What does not fit is refused with rate_limited.
type Budget struct {
	// Total is the replica's bound; PerKey the bound of one key, PerProfile that of all the
	// keys of one profile. 0 means unbounded.
	Total, PerKey, PerProfile int64

	mu        sync.Mutex
	used      int64
	byKey     map[string]int64
	byProfile map[string]int64
}

// ReadChunk is the first buffer (and charge) of a body: what a small request needs at most.
const ReadChunk = 32 << 10

// Lease is one request's share of the budget; Release returns it.
type Lease struct {
	b            *Budget
	key, profile string
	n            int64
}

// Lease starts an empty lease for the key and its profile (any stable identities of them,
// e.g. their ids).
func (b *Budget) Lease(key, profile string) *Lease { return &Lease{b: b, key: key, profile: profile} }

// Used is the replica's bytes in flight (for tests and metrics).
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// UsedBy is the bytes in flight of one profile (for tests and metrics).
func (b *Budget) UsedBy(profile string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byProfile[profile]
}

// grow takes n more bytes for the lease, or refuses without taking anything.
func (l *Lease) grow(n int64) *apierror.Error {
	return l.take(n, true)
}

// fits refuses, taking nothing, a body of n bytes that could not be held beside the bytes in
// flight now: it would be refused partway anyway, after its first chunks were allocated for
// nothing (stalled bodies hold their bytes; this only spares the garbage of the others).
func (l *Lease) fits(n int64) *apierror.Error {
	return l.take(n, false)
}

func (l *Lease) take(n int64, take bool) *apierror.Error {
	if l == nil || l.b == nil || n <= 0 {
		return nil
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Total > 0 && b.used+n > b.Total {
		return apierror.New(apierror.RateLimited, "this replica is reading too many request bodies at once; retry shortly")
	}
	if b.PerProfile > 0 && b.byProfile[l.profile]+n > b.PerProfile {
		return apierror.New(apierror.RateLimited, "this profile has more than %d bytes of request bodies in flight on this replica; retry shortly", b.PerProfile)
	}
	if b.PerKey > 0 && b.byKey[l.key]+n > b.PerKey {
		return apierror.New(apierror.RateLimited, "this API key has more than %d bytes of request bodies in flight; retry shortly", b.PerKey)
	}
	if !take {
		return nil
	}
	if b.byKey == nil {
		b.byKey, b.byProfile = map[string]int64{}, map[string]int64{}
	}
	b.used += n
	b.byKey[l.key] += n
	b.byProfile[l.profile] += n
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
	if b.byProfile[l.profile] -= l.n; b.byProfile[l.profile] <= 0 {
		delete(b.byProfile, l.profile)
	}
	l.n = 0
}

type leaseKey struct{}

// WithLease attaches a new lease of the budget for the key and its profile to the request;
// ReadBody charges the body to it. A request that went through Begin keeps the lease in its
// state, without a copy of the request.
func WithLease(r *http.Request, b *Budget, key, profile string) (*http.Request, *Lease) {
	if s := stateOf(r); s != nil && !s.leased {
		s.lease, s.leased = Lease{b: b, key: key, profile: profile}, true
		return r, &s.lease
	}
	l := b.Lease(key, profile)
	return r.WithContext(context.WithValue(r.Context(), leaseKey{}, l)), l
}

func leaseOf(r *http.Request) *Lease {
	l, _ := r.Context().Value(leaseKey{}).(*Lease)
	return l
}

// ReadBody reads at most limit bytes; a larger body is payload_too_large, decided while
// reading (a lying or absent Content-Length does not help). The body is read into chunks:
// the first of ReadChunk, each next as large as all before it (so the total doubles), never
// past the declared length (Go's server ends the body there) nor the limit; every chunk is
// charged to the request's lease before it is allocated, so the budget follows the bytes
// that arrived. Chunks are not copied as they grow (a stalled upload leaves no garbage
// behind); a body of several is joined once it is whole. One more byte, read into a byte of
// its own once the bound is reached, tells the end from a body too large.
func ReadBody(r *http.Request, limit int64) ([]byte, *apierror.Error) {
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	if r.Body == nil || r.Body == http.NoBody {
		return []byte{}, nil
	}
	lease := leaseOf(r)
	if err := lease.fits(r.ContentLength); err != nil {
		return nil, err
	}
	var c chunked
	body, err := c.read(r.Body, lease, limit, r.ContentLength)
	if err != nil {
		c.recycle()
	}
	return body, err
}

// chunked is a body being read: the full chunks and the one being filled.
type chunked struct {
	chunks [][]byte
	cur    []byte
	total  int64 // bytes in chunks
}

func (c *chunked) read(body io.Reader, lease *Lease, limit, declared int64) ([]byte, *apierror.Error) {
	bound := limit // the most the body may hold
	if declared > 0 {
		bound = declared
	}
	for {
		if c.total+int64(len(c.cur)) == bound {
			var one [1]byte
			n, err := readSome(body, one[:])
			if n > 0 {
				if bound == limit {
					return nil, tooLarge(limit)
				}
				return nil, apierror.New(apierror.InvalidRequest, "the request body is longer than its Content-Length")
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, bodyError(err)
			}
			return c.join(), nil
		}
		if len(c.cur) == cap(c.cur) {
			if c.cur != nil {
				c.chunks = append(c.chunks, c.cur)
				c.total += int64(len(c.cur))
			}
			next := min(max(c.total, ReadChunk), bound-c.total)
			if err := lease.grow(next); err != nil {
				c.cur = nil
				return nil, err
			}
			c.cur = getChunk(next)
		}
		n, err := body.Read(c.cur[len(c.cur):cap(c.cur)])
		c.cur = c.cur[:len(c.cur)+n]
		if errors.Is(err, io.EOF) {
			return c.join(), nil
		}
		if err != nil {
			return nil, bodyError(err)
		}
	}
}

// join is the whole body in one slice; the chunks it copied go back to their pools.
func (c *chunked) join() []byte {
	if len(c.chunks) == 0 {
		return c.cur // the caller's now: not recycled
	}
	out := make([]byte, 0, c.total+int64(len(c.cur)))
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	out = append(out, c.cur...)
	c.recycle()
	return out
}

// recycle gives the chunks back: a body refused halfway (the budget full, too large, too
// slow) or joined leaves its chunks to the next body rather than to the garbage collector,
// so that many uploads refused one after another do not pile up garbage beside the
// bytes the budget admits.
func (c *chunked) recycle() {
	for _, ch := range c.chunks {
		putChunk(ch)
	}
	if c.cur != nil {
		putChunk(c.cur)
	}
	c.chunks, c.cur = nil, nil
}

// chunkPools[i] holds spare chunks of ReadChunk<<i bytes: the sizes ReadBody asks for
// below its bound.
var chunkPools [12]sync.Pool

func chunkClass(n int64) (int, bool) {
	if n < ReadChunk || n%ReadChunk != 0 || n&(n-1) != 0 {
		return 0, false
	}
	i := bits.TrailingZeros64(uint64(n / ReadChunk))
	return i, i < len(chunkPools)
}

func getChunk(n int64) []byte {
	if i, ok := chunkClass(n); ok {
		if p, _ := chunkPools[i].Get().(*[]byte); p != nil {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, n)
}

func putChunk(ch []byte) {
	if i, ok := chunkClass(int64(cap(ch))); ok && int64(cap(ch)) == ReadChunk<<i {
		ch = ch[:0]
		chunkPools[i].Put(&ch)
	}
}

// readSome reads until it has a byte or an error (a Read may return neither).
func readSome(r io.Reader, p []byte) (int, error) {
	for range 100 {
		if n, err := r.Read(p); n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// bodyError is a failed read's answer: the reader's own (a body too slow, a bad gzip
// stream) or invalid_request.
func bodyError(err error) *apierror.Error {
	var ae *apierror.Error
	if errors.As(err, &ae) {
		return ae
	}
	return apierror.New(apierror.InvalidRequest, "reading the request body: %v", err)
}

func tooLarge(limit int64) *apierror.Error {
	return apierror.New(apierror.PayloadTooLarge, "the request body is larger than %s bytes", strconv.FormatInt(limit, 10))
}
