package billing

// Key budgets ride on the balance's machinery: a budgeted request's hold is taken from two
// leases at once, the profile's balance lease and the replica's lease on the key's budget in
// the window its request started (an account of its own, keyed by store.BudgetRef), each
// grown the same way (in the background before it runs dry, or by the request that does not
// fit, checked in the database under the profile lock). The group commit settles both in
// the same statement (gateway_settle), which also caps a charge at what is free in its
// window: the charges of a window never exceed the budget, on any number of replicas.

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/wire/clock"
)

// ErrBudgetExceeded is budget_exceeded: what is free of the key's budget in the request's
// window cannot cover its hold. The error is a *BudgetError.
var ErrBudgetExceeded = errors.New("key budget exceeded")

// BudgetError says which budget refused a hold, for the client's message.
type BudgetError struct {
	Budget decimal.Decimal // the key's budget per window
	Period string
	// Left is the budget less what the window's charges took; never negative.
	Left decimal.Decimal
	// Held is the part of Left held for requests in flight (on this replica and others).
	Held decimal.Decimal
	// ResetsAt is the window's end; zero for a TOTAL budget.
	ResetsAt time.Time
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("key budget exceeded: %s of %s left", e.Left, e.Budget)
}

// Unwrap makes a BudgetError ErrBudgetExceeded.
func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// Budget is a key's budget as its request's snapshot has it.
type Budget struct {
	Key    uuid.UUID
	Amount decimal.Decimal
	Period string // store.BudgetTotal, BudgetDay, BudgetWeek, BudgetMonth
}

// Window is the budget window of period holding t: UTC calendar days, weeks from Monday and
// months; TOTAL's one window starts at the epoch and has no end (zero end). It agrees with
// the database's gateway_budget_window.
func Window(period string, t time.Time) (start, end time.Time) {
	t = t.UTC()
	y, m, d := t.Date()
	switch period {
	case store.BudgetDay:
		start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	case store.BudgetWeek:
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		start = time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 7)
	case store.BudgetMonth:
		start = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
	return time.Unix(0, 0).UTC(), time.Time{}
}

// budgetUse is the budget a hold is taken against: the key's budget in one window.
type budgetUse struct {
	Budget
	ref store.BudgetRef
	end time.Time
}

func newBudgetUse(b Budget, start time.Time) *budgetUse {
	from, end := Window(b.Period, start)
	return &budgetUse{Budget: b, ref: store.BudgetRef{Key: b.Key, Window: from.Unix()}, end: end}
}

// budgetAccount is the replica's account on a budget window; the caller holds l.mu. A budget
// changed since the account's lease was taken (raised or lowered, as the snapshot now says)
// makes the lease unusable until a growth has checked it against the new amount.
func (l *Ledger) budgetAccount(b *budgetUse) *account {
	a := l.budgetAccountOf(b.ref)
	if a.version == 0 && a.growing == nil {
		a.limit = b.Amount
	} else if a.limit.Cmp(b.Amount) != 0 {
		a.limit = b.Amount
		a.deadline = 0
	}
	return a
}

// budgetAccountOf is the account of a budget window, whatever budget it was taken under
// (releases and charges of requests admitted before a change); the caller holds l.mu.
func (l *Ledger) budgetAccountOf(ref store.BudgetRef) *account {
	a := l.budgets[ref]
	if a == nil {
		a = &account{}
		l.budgets[ref] = a
	}
	a.lastUse = clock.Mono()
	return a
}

// refusal is the BudgetError of a refused budget lease; mine is what this replica holds of
// the window for other requests.
func (b *budgetUse) refusal(r *store.BudgetRefusal, mine decimal.Decimal) *BudgetError {
	left := decimal.Max(r.Budget.Sub(r.Spent), decimal.Zero)
	return &BudgetError{Budget: r.Budget, Period: b.Period, Left: left, Held: decimal.Min(r.Others.Add(mine), left), ResetsAt: b.end}
}
