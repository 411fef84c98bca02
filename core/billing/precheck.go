package billing

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/wire/clock"
)

// Covers tells whether the profile could hold amount now, without keeping the hold: nil, or
// ErrInsufficient when the balance less every replica's holds cannot pay it (or another
// error when that cannot be decided). When the replica's lease has room it only compares, in
// memory; otherwise it is a Hold given back at once, and a growth it needs stays for the
// request that follows. (A hold given back would count toward the profile's recent use for
// nothing, and cost the request path its decimal arithmetic twice over.)
func (l *Ledger) Covers(ctx context.Context, profile uuid.UUID, amount decimal.Decimal) error {
	l.mu.Lock()
	a := l.accounts[profile]
	roomy := a != nil && !l.closed && a.free(clock.Mono()).cmp(amountOf(amount)) >= 0
	l.mu.Unlock()
	if roomy {
		return nil
	}
	h, err := l.Hold(ctx, profile, amount)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.release(h)
	l.mu.Unlock()
	return nil
}

// CoversBudget is Covers for the key's budget b in the window holding start: nil, or a
// *BudgetError (ErrBudgetExceeded) when what is free of it cannot pay amount.
func (l *Ledger) CoversBudget(ctx context.Context, b Budget, start time.Time, amount decimal.Decimal) error {
	u := newBudgetUse(b, start)
	l.mu.Lock()
	a := l.budgets[u.ref]
	roomy := a != nil && !l.closed && a.limit.Cmp(b.Amount) == 0 && a.free(clock.Mono()).cmp(amountOf(amount)) >= 0
	l.mu.Unlock()
	if roomy {
		return nil
	}
	p := pool{profile: uuid.Nil, budget: u}
	x := amountOf(amount)
	if err := l.take(ctx, p, x, leaseAhead); err != nil {
		return err
	}
	l.mu.Lock()
	a = l.budgetAccountOf(u.ref)
	a.held = a.held.sub(x)
	l.mu.Unlock()
	return nil
}
