// Package requestid is the form of request ids: the ones the gateway makes, and the ones a
// client may send (contract: "Where spec.md leaves a choice").
//
// A gateway-made id is "gw-" and 32 lowercase hex digits of a uuid v7 (sortable by time as
// text). A client may not send an id of that prefix in any letter case, so an id the gateway
// made - shown in an answer's headers while the answer still runs - can never be reused by a
// client to meet (and settle before) the request that owns it.
package requestid

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"time"

	"modelgateway/core/wire/apierror"
)

// Prefix starts every id the gateway makes.
const Prefix = "gw-"

// New makes a fresh gateway id: Prefix and the 32 hex digits of a uuid v7 (RFC 9562: 48
// bits of Unix milliseconds, the version, 12 bits of sub-millisecond time as a sequence,
// the variant, 62 random bits). It is built here rather than by github.com/google/uuid,
// whose NewV7 reads its random bytes through an io.Reader into a heap copy: one allocation
// per request less, and the same layout and ordering.
func New() string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // never fails (crypto/rand)
	t := v7Time()
	ms := t >> 12
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	u[6] = 0x70 | byte(t>>8)&0x0f
	u[7] = byte(t)
	u[8] = u[8]&0x3f | 0x80
	var b [len(Prefix) + 32]byte
	copy(b[:], Prefix)
	hex.Encode(b[len(Prefix):], u[:])
	return string(b[:])
}

// lastV7 is the last v7Time handed out.
var lastV7 atomic.Int64

// v7Time is milliseconds << 12 | the sub-millisecond nanoseconds >> 8 (0 to 3906), greater
// than any value returned before, so that ids made in order sort in order (as uuid's).
func v7Time() int64 {
	nano := time.Now().UnixNano()
	milli := nano / 1e6
	now := milli<<12 | (nano-milli*1e6)>>8
	for {
		last := lastV7.Load()
		next := max(now, last+1)
		if lastV7.CompareAndSwap(last, next) {
			return next
		}
	}
}

// Gateway reports whether id has the gateway's prefix, in any letter case: such an id is
// the gateway's alone.
func Gateway(id string) bool {
	return len(id) >= len(Prefix) && strings.EqualFold(id[:len(Prefix)], Prefix)
}

// CheckClient refuses a client-sent id outside what a client may send: 1 to 200 visible
// ASCII characters, not of the gateway's form.
func CheckClient(id string) *apierror.Error {
	if !apierror.ValidRequestID(id) {
		return apierror.New(apierror.InvalidRequest, "x-request-id must be 1 to 200 visible ASCII characters")
	}
	if Gateway(id) {
		return apierror.New(apierror.InvalidRequest, "x-request-id may not start with %q: such ids are the gateway's own", Prefix)
	}
	return nil
}
