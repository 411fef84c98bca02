package billing

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// Holds that grow in steps on two replicas at once (streamed answers outrunning their first
// estimates) never hold more, together, than the balance: every step granted is money no other
// hold on either replica has, and a refused step leaves its hold as it was.
func TestGrowingHoldsOnTwoReplicasNeverOverspend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	p := newProfile(t, st, "5")
	ledgers := []*Ledger{NewLedger(st, nil), NewLedger(st, nil)}
	step := dec("0.1")
	var granted atomic.Int64 // steps of 0.1 held, first holds included
	var wg sync.WaitGroup
	holds := make([]*Hold, 8)
	for i := range holds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := ledgers[i%2]
			h, err := l.Hold(ctx, p, step)
			if errors.Is(err, ErrInsufficient) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			holds[i] = h
			granted.Add(1)
			for n := int64(2); ; n++ {
				before := h.Amount()
				err := l.Grow(ctx, h, step.Mul(decimal.NewFromInt(n)))
				if errors.Is(err, ErrInsufficient) {
					if !h.Amount().Equal(before) {
						t.Errorf("a refused growth changed the hold from %s to %s", before, h.Amount())
					}
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				granted.Add(1)
			}
		}()
	}
	wg.Wait()
	// The whole balance is held (a refusal comes only when nothing is left), and no more.
	if g := granted.Load(); g != 50 {
		t.Fatalf("%d steps of 0.1 held on a balance of 5, want 50", g)
	}
	var sum decimal.Decimal
	for _, h := range holds {
		if h != nil {
			sum = sum.Add(h.Amount())
		}
	}
	if !sum.Equal(dec("5")) {
		t.Fatalf("the holds add up to %s, want 5", sum)
	}
	if leased, _ := st.Leased(ctx, p); leased.GreaterThan(dec("5")) {
		t.Fatalf("leases %s exceed the balance", leased)
	}
	// A growth to less than the hold changes nothing and asks nothing.
	for _, h := range holds {
		if h != nil {
			before := h.Amount()
			if err := ledgers[0].Grow(ctx, h, step); err != nil || !h.Amount().Equal(before) {
				t.Fatalf("growth below the hold: %v, %s -> %s", err, before, h.Amount())
			}
			break
		}
	}
	if err := checkInvariant(ctx, st, p); err != nil {
		t.Fatal(err)
	}
}
