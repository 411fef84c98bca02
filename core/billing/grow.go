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
	if h == nil {
		if !amount.IsPositive() {
			return nil, nil
		}
		return l.hold(ctx, profile, nil, amount, decimal.Zero)
	}
	want, have := amountOf(amount), h.held
	if want.cmp(have) <= 0 {
		return h, nil
	}
	extra := want.sub(have)
	if err := l.takeBoth(ctx, profile, h.budget, extra, decimal.Zero); err != nil {
		return h, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if h.done {
		// Released meanwhile (cannot happen on the request paths): give the extra back.
		a := l.account(profile)
		a.held = a.held.sub(extra)
		if h.budget != nil {
			b := l.budgetAccountOf(h.budget.ref)
			b.held = b.held.sub(extra)
		}
		return h, fmt.Errorf("charge on a released hold")
	}
	// h.held + extra, which is amount: set rather than added.
	h.held = want
	return h, nil
}

// Grow makes h cover amount (nothing happens when it covers that already): a streamed
// answer whose running usage outgrows its hold takes more of the profile's money as it
// goes. The part beyond the hold is taken exactly as Charge's cover takes it, from what the
// replica's lease has free or after a lease growth checked against the balance less every
// replica's holds, so that replicas together never hold more than the balance.
// ErrInsufficient when the balance cannot cover it (h is then unchanged), ErrUnavailable
// when the database cannot be reached for the growth.
func (l *Ledger) Grow(ctx context.Context, h *Hold, amount decimal.Decimal) error {
	if h == nil {
		return fmt.Errorf("grow: no hold")
	}
	_, err := l.cover(ctx, h, h.Profile, amount)
	return err
}
