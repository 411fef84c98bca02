package billing

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// cover grows h (or makes a hold, when there is none) to amount. The part beyond the hold is
// held like a new request's, without room ahead: from what the replica's lease has free,
// else from a lease growth checked against the balance less every replica's holds.
func (l *Ledger) cover(ctx context.Context, h *Hold, profile uuid.UUID, amount decimal.Decimal) (*Hold, error) {
	have := decimal.Zero
	if h != nil {
		have = h.Amount
	}
	extra := amount.Sub(have)
	if !extra.IsPositive() {
		return h, nil
	}
	more, err := l.hold(ctx, profile, extra, decimal.Zero)
	if err != nil {
		return h, err
	}
	if h == nil {
		return more, nil
	}
	l.mu.Lock()
	if h.done {
		// Released meanwhile (cannot happen on the request paths): keep the new hold alone.
		l.release(more)
		l.mu.Unlock()
		return h, fmt.Errorf("charge on a released hold")
	}
	h.Amount = h.Amount.Add(extra)
	more.done = true
	l.mu.Unlock()
	return h, nil
}
