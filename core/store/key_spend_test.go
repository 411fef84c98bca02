package store_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
)

// spendFixture is a profile with credit and a key without a budget.
type spendFixture struct {
	st      *store.Store
	profile uuid.UUID
	replica uuid.UUID
	n       atomic.Int64
}

func newSpendFixture(t *testing.T) (*spendFixture, *store.Key) {
	t.Helper()
	st, _ := open(t)
	ctx := context.Background()
	p, err := st.CreateProfile(ctx, "p", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreditProfile(ctx, p.ID, decimal.RequireFromString("100000"), "", "topup"); err != nil {
		t.Fatal(err)
	}
	f := &spendFixture{st: st, profile: p.ID, replica: uuid.New()}
	return f, f.key(t)
}

func (f *spendFixture) key(t *testing.T) *store.Key {
	t.Helper()
	k, err := f.st.CreateKey(context.Background(), &store.Key{ProfileID: f.profile, Name: "k", Prefix: fmt.Sprint("sk-gw-", f.n.Add(1)), SecretHash: uuid.New().NodeID(),
		AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// charge settles one charged record of the key, started at start; its request id.
func (f *spendFixture) charge(t testing.TB, key uuid.UUID, cost string, start time.Time) string {
	t.Helper()
	id := fmt.Sprint("c", f.n.Add(1))
	end := start.Add(time.Second)
	_, err := f.st.Settle(context.Background(), f.replica, []store.Settlement{{Record: store.RequestRecord{
		ProfileID: f.profile, RequestID: id, KeyID: key, Model: "m", EndpointFamily: "chat.completions", Status: "ok", Currency: "RUB",
		Cost: decimal.NewNullDecimal(decimal.RequireFromString(cost)), UsageReliable: true, StartTime: start, EndTime: &end}}})
	if err != nil {
		t.Error(err)
	}
	return id
}

// spent is the key's spend in its budget window of period holding t, as the admin API and the
// budget leases read it.
func (f *spendFixture) spent(t *testing.T, key uuid.UUID, period string, at time.Time) decimal.Decimal {
	t.Helper()
	var window time.Time
	if err := f.st.Pool.QueryRow(context.Background(), `SELECT gateway_budget_window($1, $2)`, period, at).Scan(&window); err != nil {
		t.Fatal(err)
	}
	s, err := f.st.BudgetSpent(context.Background(), key, period, window)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *spendFixture) rows(t *testing.T, key uuid.UUID) int {
	t.Helper()
	var n int
	if err := f.st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM key_spend WHERE key_id = $1`, key).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *spendFixture) setBudget(t *testing.T, key uuid.UUID, b *store.Budget) {
	t.Helper()
	if _, err := f.st.UpdateKey(context.Background(), key, store.KeyUpdate{SetBudget: true, Budget: b}); err != nil {
		t.Fatal(err)
	}
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// Settlement keeps key_spend only for keys with a budget (nothing written for the others); a
// budget set later still counts what its window spent before: every earlier charge of the key
// and of the keys it replaced, less those given back, on the days their requests started.
func TestABudgetSetLaterCountsEarlierSpend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, old := newSpendFixture(t)
	now := time.Now().UTC()
	lastWeek := now.Add(-7 * 24 * time.Hour)

	f.charge(t, old.ID, "1.5", now)
	f.charge(t, old.ID, "4", lastWeek)
	refunded := f.charge(t, old.ID, "10", now)
	if _, err := f.st.Refund(ctx, f.profile, refunded, "refunded"); err != nil {
		t.Fatal(err)
	}
	k, err := f.st.RotateKey(ctx, old.ID, "sk-gw-rotated", make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	f.charge(t, old.ID, "0.25", now) // the old key's request in flight at the rotation
	f.charge(t, k.ID, "2", now)
	if n := f.rows(t, old.ID) + f.rows(t, k.ID); n != 0 {
		t.Fatalf("%d key_spend rows for keys without a budget", n)
	}

	f.setBudget(t, k.ID, &store.Budget{Amount: dec("100"), Period: store.BudgetDay})
	if got := f.spent(t, k.ID, store.BudgetDay, now); !got.Equal(dec("3.75")) {
		t.Errorf("today's spend when the budget is set: %s, want 3.75 (1.5 + 0.25 + 2)", got)
	}
	if got := f.spent(t, k.ID, store.BudgetTotal, now); !got.Equal(dec("7.75")) {
		t.Errorf("total spend: %s, want 7.75", got)
	}
	// From now on settlement keeps it; another period reads the same days.
	f.charge(t, k.ID, "1", now)
	f.setBudget(t, k.ID, &store.Budget{Amount: dec("100"), Period: store.BudgetTotal})
	if got := f.spent(t, k.ID, store.BudgetTotal, now); !got.Equal(dec("8.75")) {
		t.Errorf("total spend after a budgeted charge: %s, want 8.75", got)
	}
	// Without a budget the key's spend is no longer kept; set again, it counts that too.
	f.setBudget(t, k.ID, nil)
	f.charge(t, k.ID, "5", now)
	if got := f.spent(t, k.ID, store.BudgetTotal, now); !got.Equal(dec("8.75")) {
		t.Fatalf("a key without a budget had its spend kept: %s", got)
	}
	f.setBudget(t, k.ID, &store.Budget{Amount: dec("100"), Period: store.BudgetDay})
	if got := f.spent(t, k.ID, store.BudgetDay, now); !got.Equal(dec("9.75")) {
		t.Errorf("today's spend when the budget is set again: %s, want 9.75", got)
	}
}

// A budget set while the key's charges settle counts every one of them exactly once: those
// that settled before it by the rebuild, the others by settlement.
func TestABudgetSetUnderLoadCountsEveryCharge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, k := newSpendFixture(t)
	now := time.Now().UTC()
	for round := range 5 {
		var stop atomic.Bool
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					f.charge(t, k.ID, "0.001", now)
				}
			}()
		}
		time.Sleep(100 * time.Millisecond)
		f.setBudget(t, k.ID, &store.Budget{Amount: dec("100000"), Period: store.BudgetDay})
		time.Sleep(100 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		var charged decimal.Decimal
		if err := f.st.Pool.QueryRow(ctx, `SELECT -sum(amount) FROM ledger_entries WHERE profile_id = $1 AND kind = 'charge'`, f.profile).Scan(&charged); err != nil {
			t.Fatal(err)
		}
		if got := f.spent(t, k.ID, store.BudgetDay, now); !got.Equal(charged) || !charged.IsPositive() {
			t.Fatalf("round %d: the budget counts %s, the ledger charged %s", round, got, charged)
		}
		f.setBudget(t, k.ID, nil)
	}
}
