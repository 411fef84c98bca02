package billing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

func TestMain(m *testing.M) { gatewaytest.Main(m) }

func newProfile(t testing.TB, st *store.Store, credit string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	p, err := st.CreateProfile(ctx, "P", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreditProfile(ctx, p.ID, dec(credit), "topup", "c0"); err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// checkInvariant reads balance and entries in one snapshot: balance = sum(entries) at every
// commit, never below zero.
func checkInvariant(ctx context.Context, st *store.Store, p uuid.UUID) error {
	return pgx.BeginTxFunc(ctx, st.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var bal, sum decimal.Decimal
		if err := tx.QueryRow(ctx, `SELECT balance FROM profiles WHERE id = $1`, p).Scan(&bal); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE profile_id = $1`, p).Scan(&sum); err != nil {
			return err
		}
		if !bal.Equal(sum) || bal.IsNegative() {
			return fmt.Errorf("balance %s, sum of entries %s", bal, sum)
		}
		return nil
	})
}

func record(p uuid.UUID, id string, cost *decimal.Decimal) store.RequestRecord {
	now := time.Now()
	r := store.RequestRecord{ProfileID: p, RequestID: id, KeyID: uuid.Nil, Model: "m", EndpointFamily: "chat.completions",
		Status: "ok", Currency: "RUB", StartTime: now, EndTime: &now}
	if cost != nil {
		r.Cost = decimal.NullDecimal{Decimal: *cost, Valid: true}
		r.UsageReliable = true
	}
	return r
}

// Random interleavings of credits, holds, charges, releases and settlements on two replicas
// keep the ledger exact and never spend more than was credited.
func TestRandomInterleavingsKeepTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	// request_id references api_keys: give the records a real key.
	p := newProfile(t, st, "10")
	keyID := uuid.New()
	if _, err := st.Pool.Exec(ctx, `INSERT INTO api_keys (id, profile_id, prefix, secret_hash) VALUES ($1, $2, 'x', $3)`, keyID, p, keyID[:]); err != nil {
		t.Fatal(err)
	}
	ledgers := []*Ledger{NewLedger(st, nil), NewLedger(st, nil)}
	for _, l := range ledgers {
		l.FlushEvery, l.Idle = 5*time.Millisecond, 20*time.Millisecond
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); l.Run(runCtx) }()
		t.Cleanup(func() { stop(); <-done })
	}
	credited := dec("10")
	var creditMu sync.Mutex
	var charged atomic.Int64 // in nano-units
	var wg sync.WaitGroup
	stopCheck := make(chan struct{})
	checkErr := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stopCheck:
				checkErr <- nil
				return
			default:
			}
			if err := checkInvariant(ctx, st, p); err != nil {
				checkErr <- err
				return
			}
		}
	}()
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			l := ledgers[w%2]
			for i := range 60 {
				id := fmt.Sprintf("w%d-%d", w, i)
				switch op := rng.IntN(10); {
				case op == 0:
					amount := decimal.New(rng.Int64N(500)+1, -3)
					if _, err := st.CreditProfile(ctx, p, amount, "topup", id); err != nil {
						t.Error(err)
						return
					}
					creditMu.Lock()
					credited = credited.Add(amount)
					creditMu.Unlock()
				default:
					hold := decimal.New(rng.Int64N(900)+100, -3) // 0.1 .. 1.0
					h, err := l.Hold(ctx, p, hold)
					if err == ErrInsufficient {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					r := record(p, id, nil)
					r.KeyID = keyID
					if rng.IntN(4) > 0 { // reliable usage: charged at most the hold
						cost := hold.Mul(decimal.New(rng.Int64N(101), -2)).Round(Scale)
						r = record(p, id, &cost)
						r.KeyID = keyID
						charged.Add(cost.Shift(9).IntPart())
					}
					l.Finish(h, r)
				}
			}
		}()
	}
	wg.Wait()
	for _, l := range ledgers {
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stopCheck)
	if err := <-checkErr; err != nil {
		t.Fatalf("invariant broken mid-run: %v", err)
	}
	if err := checkInvariant(ctx, st, p); err != nil {
		t.Fatal(err)
	}
	prof, err := st.GetProfile(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	want := credited.Sub(decimal.New(charged.Load(), -9))
	if !prof.Balance.Equal(want) {
		t.Fatalf("balance %s, want credits %s - charges = %s", prof.Balance, credited, want)
	}
	if leased, _ := st.Leased(ctx, p); !leased.IsZero() {
		t.Fatalf("leases left after Close: %s", leased)
	}
	var entries int
	_ = st.Pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries WHERE profile_id = $1 AND kind = 'charge'`, p).Scan(&entries)
	t.Logf("charges: %d entries, %s charged, balance %s", entries, decimal.New(charged.Load(), -9), prof.Balance)
}

// Two replicas racing for a balance that covers exactly n holds grant exactly n.
func TestTwoReplicasNeverOverspend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	p := newProfile(t, st, "5")
	a, b := NewLedger(st, nil), NewLedger(st, nil)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := a
			if i%2 == 1 {
				l = b
			}
			if _, err := l.Hold(ctx, p, dec("0.25")); err == nil {
				granted.Add(1)
			} else if err != ErrInsufficient {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if g := granted.Load(); g > 20 {
		t.Fatalf("%d holds of 0.25 granted on a balance of 5", g)
	}
	leased, _ := st.Leased(ctx, p)
	if leased.GreaterThan(dec("5")) {
		t.Fatalf("leases %s exceed the balance", leased)
	}
}
