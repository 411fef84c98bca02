package billing

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/store"
)

// A batch's cost texts are the costs as Decimal.String writes them (the text the statement
// charges and the database echoes), none for an uncosted record, and past the first 64
// charges none (Settle writes those itself).
func TestCostTextsAreTheDecimalsText(t *testing.T) {
	costs := []string{"0.000123456", "", "12", "-0.5", "123456789012345678901234.5", "0", "", "7.000000001"}
	var batch []*charge
	for i := range 70 {
		c := &charge{}
		if s := costs[i%len(costs)]; s != "" {
			c.rec.Cost = decimal.NullDecimal{Decimal: decimal.RequireFromString(s), Valid: true}
		}
		batch = append(batch, c)
	}
	sts := make([]store.Settlement, len(batch))
	costTexts(batch, sts)
	for i, c := range batch {
		want := ""
		if c.rec.Cost.Valid && i < 64 {
			want = c.rec.Cost.Decimal.String()
		}
		if got := sts[i].CostText; got != want {
			t.Errorf("charge %d (%s): text %q, want %q", i, fmt.Sprint(c.rec.Cost), got, want)
		}
	}
	if sts[0].CostText == "" || !batch[64].rec.Cost.Valid || sts[64].CostText != "" {
		t.Fatal("the batch's first charge has no text, or one beyond 64 has")
	}
}

// A settled charge's text (Request.ChargedText, what the answer shows) is what FormatDecimal
// makes of the amount charged, to the digit, for costs of every shape the records carry:
// none before a charge, none kept from a charge refused. The ledger stays exact.
func TestChargedTextIsTheChargesText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "100")
	l := NewLedger(f.st, nil)
	perToken := chatPerToken()
	for i, cost := range []string{"0.1", "0.100000000", "12", "7.000000001", "0.000000001", "0", "1.5"} {
		r := l.NewRequest(f.p)
		if _, err := r.HoldWorstCase(ctx, perToken, "chat.completions", true, 100, 100); err != nil {
			t.Fatal(err)
		}
		if r.ChargedText() != "" {
			t.Fatalf("%s: a text before the charge", cost)
		}
		charged, err := r.Settle(ctx, f.record(fmt.Sprintf("c%d", i), cost))
		if err != nil {
			t.Fatalf("%s: %v", cost, err)
		}
		if got, want := r.ChargedText(), FormatDecimal(charged); got != want || !charged.Equal(dec(cost)) {
			t.Errorf("%s: charged %s, text %q, want %q", cost, charged, got, want)
		}
	}
	// A charge beyond the balance is refused: no text.
	big := l.NewRequest(f.p)
	if _, err := big.HoldWorstCase(ctx, perToken, "chat.completions", true, 100, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := big.Settle(ctx, f.record("big", "500")); !errors.Is(err, ErrInsufficient) || big.ChargedText() != "" {
		t.Fatalf("a charge beyond the balance: %v, text %q", err, big.ChargedText())
	}
	big.Finish(f.record("big", ""))
	l.Close(ctx)
	checkLedger(t, f.st, f.p)
}
