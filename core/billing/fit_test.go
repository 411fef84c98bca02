package billing

import (
	"testing"
	"time"

	"modelgateway/core/wire/clock"
)

// fit decides as free(now) >= amount did, and its room is free(now) - amount: with a live
// lease and an expired one, with and without unsettled charges, for holds that fit exactly,
// do not fit, and of nothing.
func TestFitIsFreeComparedWithTheAmount(t *testing.T) {
	t.Parallel()
	now := clock.Mono()
	for _, live := range []bool{true, false} {
		for _, spent := range []string{"0", "0.250000000"} {
			for _, amount := range []string{"0", "0.5", "0.750000000", "0.750000001", "3", "-1"} {
				a := &account{lease: amountOf(dec("2.000000000")), held: amountOf(dec("1.000000000")), spent: amountOf(dec(spent)), deadline: now + int64(time.Minute)}
				if !live {
					a.deadline = now - int64(time.Second)
				}
				free := a.free(now).dec()
				h, r, fits := a.fit(now, amountOf(dec(amount)))
				held, room := h.dec(), r.dec()
				if want := free.GreaterThanOrEqual(dec(amount)); fits != want {
					t.Errorf("live %v, spent %s, amount %s: fits %v, free %s says %v", live, spent, amount, fits, free, want)
				}
				if want := free.Sub(dec(amount)); !room.Equal(want) {
					t.Errorf("live %v, spent %s, amount %s: room %s, want %s", live, spent, amount, room, want)
				}
				if want := a.held.dec().Add(dec(amount)); !held.Equal(want) {
					t.Errorf("live %v, spent %s, amount %s: holds %s, want %s", live, spent, amount, held, want)
				}
			}
		}
	}
}
