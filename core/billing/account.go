package billing

import (
	"math"
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// account is one lease in memory: a profile's balance lease, or a key budget window's, on
// this replica (see Ledger).
type account struct {
	// guarded by Ledger.mu:
	lease    amount  // reserved for this replica in the database (as of version)
	version  int64   // of the lease row state that lease reflects
	deadline int64   // clock.Mono: the lease may be used until then; before the row's expiry
	held     amount  // holds of requests in flight
	spent    amount  // charged, not yet settled (background records with a cost)
	lastUse  int64   // clock.Mono: only how long the account has been idle is read from it
	growing  *growth // a lease growth under way
	// Use of the lease in the current and the previous rateWindow (holds taken, and the part
	// of charges beyond their holds): a growth asks for room ahead in proportion, so that a
	// busy profile grows its lease a few times a second, not every few requests.
	used, prevUsed amount
	usedSince      int64 // clock.Mono
	// limit is, for a key budget's account, the budget its lease was taken under.
	limit decimal.Decimal
}

// rateWindow and aheadWindows size the room a lease growth asks for beyond what is needed:
// about aheadWindows*rateWindow of the profile's recent use on this replica (and at least
// leaseFactor holds). lowWindows: when less than that much use is left free, the lease grows
// in the background, beside the requests, so that they rarely wait for a growth.
const (
	rateWindow   = 100 * time.Millisecond
	aheadWindows = 5
	lowWindows   = 2
)

// use counts amount taken from the lease at now (clock.Mono); the caller holds Ledger.mu.
func (a *account) use(now int64, x amount) {
	if d := time.Duration(now - a.usedSince); d >= rateWindow {
		if d >= 2*rateWindow {
			a.prevUsed = amount{}
		} else {
			a.prevUsed = a.used
		}
		a.used, a.usedSince = amount{}, now
	}
	a.used = a.used.add(x)
}

// recentUse is the larger of the current and the previous window's use.
func (a *account) recentUse() amount { return maxAmount(a.used, a.prevUsed) }

func (a *account) free(now int64) amount {
	if now >= a.deadline {
		return amount{}
	}
	return a.lessSpent(a.lease.sub(a.held))
}

// lessSpent is d - a.spent.
func (a *account) lessSpent(d amount) amount { return d.sub(a.spent) }

// fit tells whether amount fits in the free part of the lease at now, and gives the holds
// with amount added and the room left after it (free less amount). It is free(now) >=
// amount, worked out from the new holds, which the caller needs anyway, so that the room
// costs no subtraction of its own.
func (a *account) fit(now int64, x amount) (held, room amount, fits bool) {
	held = a.held.add(x)
	if now >= a.deadline {
		// Nothing is free: only a hold of nothing (a free model) fits.
		return held, amount{}.sub(x), x.sign() <= 0
	}
	room = a.lessSpent(a.lease.sub(held))
	return held, room, room.sign() >= 0
}

// waitWindow is how many recent durations the percentiles of Stats cover: the log's line
// every statsEvery, at a few thousand charges a second, is over its own interval or most of it.
const waitWindow = 1 << 14

// ring keeps the last waitWindow durations, in microseconds (what the log shows; up to 71
// minutes): 64 KiB once full. It held 1<<16 time.Durations, 512 KiB of live heap after the
// first 65,536 charges, which the GC's goal doubled at every collection of a busy replica.
type ring struct {
	us []uint32
	at int
}

func (r *ring) add(d time.Duration) {
	us := uint32(min(max(d.Microseconds(), 0), math.MaxUint32))
	if len(r.us) < waitWindow {
		if len(r.us) == cap(r.us) { // doubling, to waitWindow exactly (append rounds past it)
			r.us = append(make([]uint32, 0, min(max(2*cap(r.us), 256), waitWindow)), r.us...)
		}
		r.us = append(r.us, us)
		return
	}
	r.us[r.at] = us
	r.at = (r.at + 1) % waitWindow
}

// percentiles are the median and the 99th percentile of a copy of the durations.
func percentiles(us []uint32) (p50, p99 time.Duration) {
	if len(us) == 0 {
		return 0, 0
	}
	slices.Sort(us)
	at := func(i int) time.Duration { return time.Duration(us[i]) * time.Microsecond }
	return at(len(us) / 2), at(min(len(us)-1, len(us)*99/100))
}
