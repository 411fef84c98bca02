package billing

import (
	"context"
	"errors"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/metering"
	"modelgateway/core/store"
)

// chatPerToken prices chat completions at 0.001 a token, input and output alike.
func chatPerToken() []store.Price {
	return []store.Price{{EndpointFamilies: []string{"chat.completions"}, BillingMode: "per_token",
		Input: decimal.NewNullDecimal(dec("1000")), Output: decimal.NewNullDecimal(dec("1000"))}}
}

// One request's money from hold to settlement, as core/rpc drives it: the worst case is held
// at the family's price, a durable charge leaves the request settled and holding nothing, a
// cut answer's charge is given back once however often it is cut, and a charge beyond what
// is free is refused with the hold kept. A realtime-style request pays each part from a hold
// of its own. The ledger stays exact throughout.
func TestARequestsMoneyFromHoldToSettlement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	l := NewLedger(f.st, nil)
	perToken := chatPerToken()
	worst := func(p Price) decimal.Decimal { return p.WorstCase(100, 100) }

	// No usable price: nothing is held.
	r := l.NewRequest(f.p)
	if _, err := r.HoldWorst(ctx, perToken, "embeddings", false, worst); !errors.Is(err, ErrNoPrice) || r.Holding() {
		t.Fatalf("a family without a price: %v, holding %v", err, r.Holding())
	}
	// The worst case is held at the family's price.
	amount, err := r.HoldWorst(ctx, perToken, "chat.completions", true, worst)
	if err != nil || !amount.Equal(dec("0.2")) || !r.Held().Equal(amount) || r.Price().PerRequest {
		t.Fatalf("hold: %s held %s, %v", amount, r.Held(), err)
	}
	if r.hold != &r.first {
		t.Fatal("the first hold is not in the request's allocation")
	}
	// Only reliable usage is priced at token rates.
	if c := r.Cost(metering.Usage{Input: 50, Output: 50}); c.Valid {
		t.Errorf("unreliable usage priced at %s", c.Decimal)
	}
	cost := r.Cost(metering.Usage{Input: 50, Output: 50, Reliable: true})
	if !cost.Valid || !cost.Decimal.Equal(dec("0.1")) {
		t.Fatalf("cost %v, want 0.1", cost)
	}
	if r.Settled() {
		t.Fatal("settled before Settle")
	}
	charged, err := r.Settle(ctx, f.record("a", "0.1"))
	if err != nil || !charged.Equal(dec("0.1")) || !r.Durable() || !r.Settled() || r.Holding() {
		t.Fatalf("settle: %s, %v; durable %v holding %v", charged, err, r.Durable(), r.Holding())
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("0.9")) {
		t.Fatalf("balance %s after the charge, want 0.9", b)
	}
	r.Unsettle("a", "cancelled")
	r.Unsettle("a", "cancelled")

	// A charge beyond the hold and what is free is refused, and the hold is kept.
	big := l.NewRequest(f.p)
	if _, err := big.HoldWorst(ctx, perToken, "chat.completions", true, worst); err != nil {
		t.Fatal(err)
	}
	if _, err := big.Settle(ctx, f.record("big", "5")); !errors.Is(err, ErrInsufficient) || big.Durable() || !big.Holding() {
		t.Fatalf("a charge beyond the balance: %v, durable %v, holding %v", err, big.Durable(), big.Holding())
	}
	big.Finish(f.record("big", ""))
	if big.Holding() {
		t.Fatal("still holding after Finish")
	}

	// Parts (realtime responses) are each paid from a hold of their own.
	rt := l.NewRequest(f.p)
	if _, err := rt.HoldWorst(ctx, perToken, "chat.completions", true, worst); err != nil {
		t.Fatal(err)
	}
	first := rt.hold
	if _, err := rt.SettlePart(ctx, f.record("rt 1", "0.05")); err != nil || rt.Durable() || rt.Holding() {
		t.Fatalf("a part: %v, durable %v, holding %v", err, rt.Durable(), rt.Holding())
	}
	if err := rt.Hold(ctx, rt.Price(), dec("0.2")); err != nil || !rt.Held().Equal(dec("0.2")) {
		t.Fatalf("the next part's hold: %s, %v", rt.Held(), err)
	}
	// The first hold, which the first part's charge read, is never reused for a later one.
	if first != &rt.first || rt.hold == first || !first.done {
		t.Fatalf("the next part's hold reuses the first (first in the request %v, same %v, first done %v)", first == &rt.first, rt.hold == first, first.done)
	}
	rt.Finish(f.record("rt", ""))

	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// 1 - 0.1 (given back) - 0.05 (the realtime part).
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("0.95")) {
		t.Fatalf("balance %s at the end, want 0.95 (the cut answer's charge given back once)", b)
	}
	checkLedger(t, f.st, f.p)
}
