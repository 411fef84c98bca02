package billing

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
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
	roomy := a != nil && !l.closed && a.free(time.Now()).GreaterThanOrEqual(amount)
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
