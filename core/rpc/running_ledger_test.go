package rpc

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/billing"
	"modelgateway/core/provider"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apierror"
)

// A long answer grows its hold a few times, not once per chunk: 2000 chunks of 7 bytes
// against a first hold of 20 output tokens take about log2(14000/20) growths. Where the
// balance ends, the growths step by growStep and then to exactly what is delivered, so that
// the answer stops within one chunk of what the balance pays for.
func TestHoldsGrowInStepsAndStopAtTheBalance(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	ledger := billing.NewLedger(st, nil)
	t.Cleanup(func() { _ = ledger.Close(context.Background()) })
	price := billing.Price{Output: decimal.NewFromInt(1000)} // 0.001 a token
	chunk := provider.TextEvent(" alpha.")                   // 7 bytes
	for _, c := range []struct {
		credit          string
		chunks, growths int // chunks delivered; growths at most
	}{
		{"100", 2000, 8}, // a bound of 14000 tokens: 14 of 100, in doublings from 20 tokens
		{"5", 714, 16},   // 5000 tokens: 714 chunks of 7, then the 715th is refused
	} {
		p, err := st.CreateProfile(ctx, "P", "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreditProfile(ctx, p.ID, decimal.RequireFromString(c.credit), "topup", "c"); err != nil {
			t.Fatal(err)
		}
		b := &billed{s: &CoreServer{Deps: &Deps{Ledger: ledger}}, ctx: ctx, snap: &snapshot.Snapshot{Currency: "RUB"}, money: ledger.NewRequest(p.ID)}
		if err := b.money.Hold(ctx, price, price.WorstCase(0, 20)); err != nil {
			t.Fatal(err)
		}
		r := b.newRunning(0, 20)
		delivered, growths := 0, 0
		var refused *apierror.Error
		for range 2000 {
			before := r.coverOut
			if refused = r.pass(chunk); refused != nil {
				break
			}
			if r.coverOut != before {
				growths++
			}
			delivered++
		}
		if delivered != c.chunks || growths > c.growths {
			t.Errorf("credit %s: %d chunks delivered after %d growths (refused: %v), want %d after at most %d",
				c.credit, delivered, growths, refused, c.chunks, c.growths)
		}
		if c.chunks < 2000 && (refused == nil || refused.Code != apierror.InsufficientBalance) {
			t.Errorf("credit %s: the end came with %v, want insufficient_balance", c.credit, refused)
		}
		// The hold never exceeds the balance, and covers what was delivered.
		if b.money.Held().GreaterThan(decimal.RequireFromString(c.credit)) || b.money.Held().LessThan(price.WorstCase(0, int64(7*delivered))) {
			t.Errorf("credit %s: hold %s for %d bytes delivered", c.credit, b.money.Held(), 7*delivered)
		}
		t.Logf("credit %s: %d chunks, %d growths, hold %s", c.credit, delivered, growths, b.money.Held())
	}
}
