package billing

import (
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// account is one lease in memory: a profile's balance lease, or a key budget window's, on
// this replica (see Ledger).
type account struct {
	// guarded by Ledger.mu:
	lease    decimal.Decimal // reserved for this replica in the database (as of version)
	version  int64           // of the lease row state that lease reflects
	deadline time.Time       // the lease may be used until then; before the row's expiry
	held     decimal.Decimal // holds of requests in flight
	spent    decimal.Decimal // charged, not yet settled (background records with a cost)
	lastUse  time.Time
	growing  *growth // a lease growth under way
	// Use of the lease in the current and the previous rateWindow (holds taken, and the part
	// of charges beyond their holds): a growth asks for room ahead in proportion, so that a
	// busy profile grows its lease a few times a second, not every few requests.
	used, prevUsed decimal.Decimal
	usedSince      time.Time
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

// use counts amount taken from the lease at now; the caller holds Ledger.mu.
func (a *account) use(now time.Time, amount decimal.Decimal) {
	if d := now.Sub(a.usedSince); d >= rateWindow {
		if d >= 2*rateWindow {
			a.prevUsed = decimal.Zero
		} else {
			a.prevUsed = a.used
		}
		a.used, a.usedSince = decimal.Zero, now
	}
	a.used = a.used.Add(amount)
}

// recentUse is the larger of the current and the previous window's use.
func (a *account) recentUse() decimal.Decimal { return decimal.Max(a.used, a.prevUsed) }

func (a *account) free(now time.Time) decimal.Decimal {
	if !now.Before(a.deadline) {
		return decimal.Zero
	}
	return a.lessSpent(a.lease.Sub(a.held))
}

// lessSpent is d - a.spent. Charges are made durable at once (Charge), so spent is almost
// always zero: subtracting it would cost a big-integer rescale and a difference on every hold
// for nothing.
func (a *account) lessSpent(d decimal.Decimal) decimal.Decimal {
	if a.spent.IsZero() {
		return d
	}
	return d.Sub(a.spent)
}

// fit tells whether amount fits in the free part of the lease at now, and gives the holds
// with amount added and the room left after it (free less amount). It is free(now) >=
// amount, worked out from the new holds, which the caller needs anyway, so that the room
// costs no subtraction of its own.
func (a *account) fit(now time.Time, amount decimal.Decimal) (held, room decimal.Decimal, fits bool) {
	held = a.held.Add(amount)
	if !now.Before(a.deadline) {
		// Nothing is free: only a hold of nothing (a free model) fits.
		return held, amount.Neg(), amount.Sign() <= 0
	}
	room = a.lessSpent(a.lease.Sub(held))
	return held, room, room.Sign() >= 0
}

// waitWindow is how many recent durations the percentiles of Stats cover.
const waitWindow = 1 << 16

// ring keeps the last waitWindow durations.
type ring struct {
	d  []time.Duration
	at int
}

func (r *ring) add(d time.Duration) {
	if len(r.d) < waitWindow {
		r.d = append(r.d, d)
		return
	}
	r.d[r.at] = d
	r.at = (r.at + 1) % waitWindow
}

// percentiles are the median and the 99th percentile of a copy of the durations.
func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[len(d)/2], d[min(len(d)-1, len(d)*99/100)]
}
