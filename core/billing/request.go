package billing

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/metering"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

// Request is the money of one admitted request: the price it is charged at, the hold that
// covers it while it runs, and whether its charge is durable (written before the answer's
// end went out) or was given back. Every priced RPC of core/rpc goes through one, hold →
// grow → price → settle or finish, so the money rules live here once; what the client is
// told at each step is the caller's. A Request is used by one goroutine at a time.
type Request struct {
	ledger  *Ledger
	profile uuid.UUID
	price   Price
	hold    *Hold // nil: nothing held (none yet, refused, spent by a charge, or released)
	// first is the request's first hold, in the request's allocation: a later one (a
	// realtime session's next response) is made apart, so that a hold is never reused
	// while a charge or a settlement may still read it.
	first     Hold
	firstUsed bool
	// budget is the key's budget in the window of the request's start; nil: none.
	budget *budgetUse
	// durable: the request's own charge is in the database (Settle); refunded: and was given
	// back since, its answer cut after all (Unsettle).
	durable, refunded bool
	// batch: a batch item's request (BatchItem).
	batch bool
	// chargedText is the text of the last charge Settle or SettlePart made, when the commit
	// made it (ChargedText).
	chargedText string
}

// NewRequest starts the money of a request of the profile; it holds nothing yet.
func (l *Ledger) NewRequest(profile uuid.UUID) Request {
	return Request{ledger: l, profile: profile}
}

// BatchItem marks the request as a batch item's: its charge may wait a little for the
// charges of the replica's other batch items, to share their commit (Ledger.gatherBatch).
func (r *Request) BatchItem() { r.batch = true }

// Limit makes the request's holds count against the key's budget b too, in the window holding
// start (the request's start: its charge counts in that window).
func (r *Request) Limit(b Budget, start time.Time) {
	r.budget = newBudgetUse(b, start)
}

// StartAt moves the window of the request's next hold to the one holding t: each response of
// a realtime session is a request of its own, started when the previous one ended.
func (r *Request) StartAt(t time.Time) {
	if r.budget != nil {
		r.budget = newBudgetUse(r.budget.Budget, t)
	}
}

// HoldWorst finds the family's price among prices and holds the worst case that worst
// computes from it, returned for the caller's message. ErrNoPrice without a usable rule,
// ErrInsufficient when the balance cannot cover the amount, a *BudgetError (ErrBudgetExceeded) when
// the key's budget cannot, else what Ledger.Hold returns.
func (r *Request) HoldWorst(ctx context.Context, prices []store.Price, family string, needsOutput bool, worst func(Price) decimal.Decimal) (decimal.Decimal, error) {
	price, err := Find(prices, family, needsOutput)
	if err != nil {
		return decimal.Zero, err
	}
	amount := worst(price)
	return amount, r.Hold(ctx, price, amount)
}

// HoldWorstCase is HoldWorst of the price's WorstCase(input, output), worked out in the
// books' nanos: the hold of every request, which then makes no decimal. The amount comes
// back only with an error, for the caller's message (zero when held).
func (r *Request) HoldWorstCase(ctx context.Context, prices []store.Price, family string, needsOutput bool, input, output int64) (decimal.Decimal, error) {
	price, err := Find(prices, family, needsOutput)
	if err != nil {
		return decimal.Zero, err
	}
	x := price.worstAmount(input, output)
	if err := r.holdAmount(ctx, price, x); err != nil {
		return x.dec(), err
	}
	return decimal.Zero, nil
}

// Hold makes the request charged at price and holds amount for it: its first hold, or (a
// realtime session) a new one after a charge spent the last. On error nothing is held.
func (r *Request) Hold(ctx context.Context, price Price, amount decimal.Decimal) error {
	return r.holdAmount(ctx, price, amountOf(amount))
}

func (r *Request) holdAmount(ctx context.Context, price Price, x amount) error {
	r.price = price
	var dst *Hold
	if !r.firstUsed {
		dst = &r.first
	}
	h, err := r.ledger.holdInto(ctx, dst, r.profile, r.budget, x, leaseAhead)
	if h != nil && h == dst {
		r.firstUsed = true
	}
	r.hold = h
	return err
}

// Price is what the request is charged at (HoldWorst, Hold).
func (r *Request) Price() Price { return r.price }

// Holding tells whether the request holds money now.
func (r *Request) Holding() bool { return r.hold != nil }

// Held is the amount the request holds now, zero without a hold.
func (r *Request) Held() decimal.Decimal {
	if r.hold == nil {
		return decimal.Zero
	}
	return r.hold.Amount()
}

// Grow makes the hold cover amount, taking the part beyond it from the profile's available
// balance with the same guarantees as the first hold (Ledger.Grow): ErrInsufficient when the
// balance cannot cover it (the hold is then unchanged), ErrUnavailable when the database
// cannot be reached for it. It is the only way a request's hold grows.
func (r *Request) Grow(ctx context.Context, amount decimal.Decimal) error {
	return r.ledger.Grow(ctx, r.hold, amount)
}

// Cost is the charge of an answer with usage u: reliable usage at the token rates, or the
// fixed price of a complete answer; invalid when the usage cannot be priced.
func (r *Request) Cost(u metering.Usage) decimal.NullDecimal {
	if u.Reliable || r.price.PerRequest {
		return decimal.NullDecimal{Decimal: r.price.Cost(u), Valid: true}
	}
	return decimal.NullDecimal{}
}

// Durable tells whether the request's own charge is in the database (Settle).
func (r *Request) Durable() bool { return r.durable }

// Settled tells whether the request's charge is decided: durable, or given back since.
func (r *Request) Settled() bool { return r.durable || r.refunded }

// Settle makes rec's charge (the request's own record) durable, paid from the hold, before
// the end of the answer goes to the client; the request is then Durable and holds nothing.
// ErrInsufficient: the cost went beyond the hold and what is free (the ledger gives back
// whatever a capped commit took); any other error: the charge could not be recorded (a
// commit whose answer was lost is given back). On error nothing is charged and the answer's
// end must not be sent.
func (r *Request) Settle(ctx context.Context, rec store.RequestRecord) (decimal.Decimal, error) {
	charged, err := r.SettlePart(ctx, rec)
	if err == nil {
		r.durable = true
	}
	return charged, err
}

// SettlePart is Settle for one part of the request charged under its own record (each
// response of a realtime session): the hold pays for it and is spent, and the request is not
// Durable; the next part needs a hold of its own (Hold). On error the hold is kept.
func (r *Request) SettlePart(ctx context.Context, rec store.RequestRecord) (decimal.Decimal, error) {
	charged, text, err := r.ledger.charge(ctx, r.hold, rec, apierror.InsufficientBalance, r.batch)
	if errors.Is(err, ErrInsufficient) {
		return decimal.Zero, err
	}
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			// The commit may have happened with only its answer lost: give it back if so.
			r.ledger.Refund(r.profile, rec.RequestID, apierror.Unavailable)
		}
		return decimal.Zero, err
	}
	r.hold = nil
	r.chargedText = text
	return charged, nil
}

// ChargedText is what the last Settle or SettlePart charged, as FormatDecimal writes it,
// where the commit wrote it already (AppendDecimal, for the statement); empty when it did
// not (a group of more than 64 charges) or nothing was charged.
func (r *Request) ChargedText() string { return r.chargedText }

// Unsettle gives back the durable charge of the request, recorded under requestID, once: the
// charge was written before the end was sent, and the client went away in between, so the
// answer was cut after all and is not charged. The refunded record gets status. Nothing
// happens when no charge is durable.
func (r *Request) Unsettle(requestID, status string) {
	if r.durable && !r.refunded {
		r.refunded = true
		r.ledger.Refund(r.profile, requestID, status)
	}
}

// Finish releases the hold and queues rec (its charge, when it has one) for background
// settlement; the request then holds nothing.
func (r *Request) Finish(rec store.RequestRecord) {
	r.ledger.Finish(r.hold, rec)
	r.hold = nil
}

// Queue queues rec for background settlement and keeps the hold: the record of a part whose
// charge could not be recorded, while the request goes on.
func (r *Request) Queue(rec store.RequestRecord) {
	r.ledger.Finish(nil, rec)
}
