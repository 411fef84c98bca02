package batchrun

import "time"

// Priority lets live requests go first (contract.md "Files and batches"). A replica's Go
// scheduler has no priorities: an item running beside a live request shares the cores, the
// database and the group commit with it, whatever it is doing. So the rule is about when
// items start: while clients' requests come (one in flight, or one arrived within Quiet),
// items start at most one each Trickle, so that a batch still moves under steady live
// traffic (items that wait on a slow upstream still fill the slots, at that pace), and an
// item that costs the replica CPU runs beside about one live request in Trickle/(its
// time); when live traffic pauses for Quiet, items fill every slot at once again. Items
// running when a live request arrives finish; their slots are refilled at the trickle's
// pace.
type Priority struct {
	// Live reports the replica's live requests in flight and when the last one arrived
	// (front.LiveTraffic).
	Live func() (inFlight int64, last time.Time)
	// Quiet is how long live traffic must have paused before items fill every slot;
	// DefaultQuiet when 0.
	Quiet time.Duration
	// Trickle is the least time between the starts of items while live traffic flows;
	// DefaultTrickle when 0; when negative no item starts beside live traffic.
	Trickle time.Duration
}

// Defaults of Priority. Quiet is about a live request's time on the canned upstream; the
// trickle moves a batch on at up to 20 items a second per replica under any live load,
// which costs the replica about 0.5 % of a core on the canned upstream (an item: about
// 0.25 ms of CPU).
const (
	DefaultQuiet   = 5 * time.Millisecond
	DefaultTrickle = 50 * time.Millisecond
)

// allow says whether an item may start at now, the last item having started at lastStart.
func (p *Priority) allow(now time.Time, lastStart time.Time) bool {
	if p == nil || p.Live == nil {
		return true
	}
	quiet, trickle := p.Quiet, p.Trickle
	if quiet == 0 {
		quiet = DefaultQuiet
	}
	if trickle == 0 {
		trickle = DefaultTrickle
	}
	inFlight, last := p.Live()
	if inFlight == 0 && now.Sub(last) >= quiet {
		return true
	}
	return trickle > 0 && now.Sub(lastStart) >= trickle
}
