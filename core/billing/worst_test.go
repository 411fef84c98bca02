package billing

import (
	"context"
	"errors"
	"testing"

	"github.com/shopspring/decimal"
)

// The hold worked out in nanos (worstAmount) is the worst case's decimal to the digit, where
// the sum fits in 64 bits and where it falls back to decimals (rates of many digits, sums
// beyond 2^63, per-request prices of more than nine decimals).
func TestWorstAmountIsWorstCase(t *testing.T) {
	t.Parallel()
	perToken := func(in, out string) Price {
		return Price{Input: dec(in), CachedInput: dec(in), CacheWrite: dec(in), AudioInput: dec(in), Output: dec(out), AudioOutput: dec(out)}
	}
	cases := []struct {
		name    string
		p       Price
		in, out int64
	}{
		{"the bench's chat", perToken("1.00", "2.00"), 10064, 8192},
		{"a fraction of a nano rounded up", perToken("0.0000001", "0.0000003"), 7, 0},
		{"no tokens", perToken("1", "2"), 0, 0},
		{"dear audio input", Price{Input: dec("1"), CachedInput: dec("0.5"), CacheWrite: dec("1.25"), AudioInput: dec("40"), Output: dec("2"), AudioOutput: dec("80")}, 300, 120},
		{"a rate of 19 digits", perToken("1.234567890123456789", "1"), 3, 3},
		{"a sum beyond 2^63 nanos", perToken("1000000000", "1"), 1 << 40, 0},
		{"a per-request price", Price{PerRequest: true, Request: dec("0.25")}, 1 << 40, 1 << 40},
		{"a per-request price of 12 decimals", Price{PerRequest: true, Request: dec("0.000000000123")}, 0, 0},
	}
	for _, c := range cases {
		want := c.p.WorstCase(c.in, c.out)
		got := c.p.worstAmount(c.in, c.out)
		if w := amountOf(want); !got.dec().Equal(want) || got.wide != w.wide || got.n != w.n {
			t.Errorf("%s: %s (wide %v), want %s", c.name, got.dec(), got.wide, want)
		}
	}
}

// HoldWorstCase holds what HoldWorst of WorstCase holds, tells the amount only when refused,
// and keeps the first hold in the request.
func TestHoldWorstCaseHoldsTheWorstCase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "1")
	l := NewLedger(f.st, nil)
	perToken := chatPerToken()

	r := l.NewRequest(f.p)
	if _, err := r.HoldWorstCase(ctx, perToken, "embeddings", false, 100, 100); !errors.Is(err, ErrNoPrice) || r.Holding() {
		t.Fatalf("a family without a price: %v, holding %v", err, r.Holding())
	}
	amount, err := r.HoldWorstCase(ctx, perToken, "chat.completions", true, 100, 100)
	if err != nil || !amount.IsZero() || !r.Held().Equal(dec("0.2")) || r.hold != &r.first {
		t.Fatalf("hold: %s returned, %s held, %v (in the request: %v)", amount, r.Held(), err, r.hold == &r.first)
	}
	same := l.NewRequest(f.p)
	if _, err := same.HoldWorst(ctx, perToken, "chat.completions", true, func(p Price) decimal.Decimal { return p.WorstCase(100, 100) }); err != nil || !same.Held().Equal(r.Held()) {
		t.Fatalf("HoldWorst held %s, %v; HoldWorstCase %s", same.Held(), err, r.Held())
	}
	// Beyond the balance (1, of which 0.4 is held): refused, nothing held, the amount told.
	big := l.NewRequest(f.p)
	amount, err = big.HoldWorstCase(ctx, perToken, "chat.completions", true, 1000, 0)
	if !errors.Is(err, ErrInsufficient) || big.Holding() || !amount.Equal(dec("1")) {
		t.Fatalf("a hold beyond the balance: %v, holding %v, amount %s", err, big.Holding(), amount)
	}
	r.Finish(f.record("a", ""))
	same.Finish(f.record("b", ""))
	if r.Holding() || same.Holding() {
		t.Fatal("holding after Finish")
	}
}
