package billing

import (
	"context"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// Covers tells whether the profile could hold amount now, without keeping the hold: nil, or
// ErrInsufficient when the balance less every replica's holds cannot pay it (or another
// error when that cannot be decided). It is a Hold given back at once, so it answers from
// the replica's lease in memory when the lease has room, and a growth it needs stays for the
// request that follows.
func (l *Ledger) Covers(ctx context.Context, profile uuid.UUID, amount decimal.Decimal) error {
	h, err := l.Hold(ctx, profile, amount)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.release(h)
	l.mu.Unlock()
	return nil
}
