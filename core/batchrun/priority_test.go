package batchrun

import (
	"testing"
	"time"
)

// TestPriorityAllow: items start freely only once live traffic has paused for Quiet; while it
// flows, at most one starts each Trickle, and none at all with the trickle off.
func TestPriorityAllow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name      string
		inFlight  int64
		lastLive  time.Time
		trickle   time.Duration
		lastStart time.Time
		want      bool
	}{
		{"no live traffic ever", 0, time.Time{}, 0, ago(0), true},
		{"live traffic paused for the quiet time", 0, ago(DefaultQuiet), 0, ago(0), true},
		{"a live request arrived within the quiet time", 0, ago(DefaultQuiet / 2), 0, ago(DefaultTrickle / 2), false},
		{"a live request in flight", 1, ago(time.Second), 0, ago(DefaultTrickle / 2), false},
		{"a live request in flight, trickle due", 1, ago(time.Second), 0, ago(DefaultTrickle), true},
		{"live traffic, trickle off", 2, ago(0), -1, ago(time.Hour), false},
		{"a longer trickle set", 1, ago(0), time.Second, ago(DefaultTrickle * 2), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Priority{Trickle: c.trickle, Live: func() (int64, time.Time) { return c.inFlight, c.lastLive }}
			if got := p.allow(now, c.lastStart); got != c.want {
				t.Errorf("allow = %v, want %v", got, c.want)
			}
		})
	}
	var none *Priority
	if !none.allow(now, now) {
		t.Error("without a Priority every item may start")
	}
}
