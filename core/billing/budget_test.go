package billing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
)

func TestWindow(t *testing.T) {
	t.Parallel()
	utc := func(y int, m time.Month, d, h int) time.Time { return time.Date(y, m, d, h, 0, 0, 0, time.UTC) }
	moscow := time.FixedZone("MSK", 3*3600)
	for _, c := range []struct {
		name, period string
		t            time.Time
		start, end   time.Time
	}{
		{"a day", store.BudgetDay, utc(2026, 11, 27, 13), utc(2026, 11, 27, 0), utc(2026, 11, 28, 0)},
		{"a day is UTC whatever the zone", store.BudgetDay, time.Date(2026, 11, 28, 1, 0, 0, 0, moscow), utc(2026, 11, 27, 0), utc(2026, 11, 28, 0)},
		{"midnight starts the day", store.BudgetDay, utc(2026, 11, 28, 0), utc(2026, 11, 28, 0), utc(2026, 11, 29, 0)},
		{"a Friday's week starts on Monday", store.BudgetWeek, utc(2026, 11, 27, 13), utc(2026, 11, 23, 0), utc(2026, 11, 30, 0)},
		{"a Sunday is the week's last day", store.BudgetWeek, utc(2026, 11, 29, 23), utc(2026, 11, 23, 0), utc(2026, 11, 30, 0)},
		{"a Monday starts the week", store.BudgetWeek, utc(2026, 11, 30, 0), utc(2026, 11, 30, 0), utc(2026, 12, 7, 0)},
		{"a week across the year", store.BudgetWeek, utc(2027, 1, 1, 5), utc(2026, 12, 28, 0), utc(2027, 1, 4, 0)},
		{"a month", store.BudgetMonth, utc(2026, 12, 31, 23), utc(2026, 12, 1, 0), utc(2027, 1, 1, 0)},
		{"February of a leap year", store.BudgetMonth, utc(2028, 2, 29, 12), utc(2028, 2, 1, 0), utc(2028, 3, 1, 0)},
		{"total has one window and no end", store.BudgetTotal, utc(2026, 11, 27, 13), time.Unix(0, 0).UTC(), time.Time{}},
	} {
		start, end := Window(c.period, c.t)
		if !start.Equal(c.start) || !end.Equal(c.end) {
			t.Errorf("%s: Window(%s, %s) = %s .. %s, want %s .. %s", c.name, c.period, c.t, start, end, c.start, c.end)
		}
	}
}

// The Go windows and the database's (gateway_budget_window, which gateway_settle uses to cap
// charges) agree: lease rows are keyed by the window's start, so a disagreement would leave
// every lease uncounted.
func TestBudgetWindowAgreesWithTheDatabase(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "1")
	ctx := context.Background()
	base := time.Date(2026, 12, 25, 7, 30, 0, 0, time.UTC)
	for _, period := range []string{store.BudgetDay, store.BudgetWeek, store.BudgetMonth, store.BudgetTotal} {
		for h := 0; h < 24*40; h += 13 {
			at := base.Add(time.Duration(h) * time.Hour)
			var db time.Time
			if err := f.st.Pool.QueryRow(ctx, `SELECT gateway_budget_window($1, $2)`, period, at).Scan(&db); err != nil {
				t.Fatal(err)
			}
			if start, _ := Window(period, at); !start.Equal(db) {
				t.Fatalf("%s at %s: Go %s, database %s", period, at, start, db)
			}
		}
	}
}

// setBudget gives the fixture's key a budget in the database (what UpdateKey writes) and
// returns it as the snapshot gives it to requests.
func (f *fixture) setBudget(t *testing.T, amount, period string) Budget {
	t.Helper()
	if _, err := f.st.Pool.Exec(context.Background(), `UPDATE api_keys SET budget_amount = $2, budget_period = $3 WHERE id = $1`,
		f.key, amount, period); err != nil {
		t.Fatal(err)
	}
	return Budget{Key: f.key, Amount: dec(amount), Period: period}
}

// keyCharges is what the key's records were charged, from the ledger's entries, and what
// key_spend counts for it.
func (f *fixture) keyCharges(t *testing.T) (charged, spend decimal.Decimal) {
	t.Helper()
	if err := f.st.Pool.QueryRow(context.Background(), `
		SELECT (SELECT coalesce(-sum(e.amount), 0) FROM ledger_entries e JOIN requests r ON r.profile_id = e.profile_id
		        AND (r.request_id = e.request_id OR 'refund ' || r.request_id = e.idempotency_key) WHERE r.key_id = $1),
		       (SELECT coalesce(sum(spent), 0) FROM key_spend WHERE key_id = $1)`, f.key).Scan(&charged, &spend); err != nil {
		t.Fatal(err)
	}
	return charged, spend
}

// budgeted runs one request of the fixture's key through a Request limited by b: hold, then
// a charge of cost (above the hold when cost > hold: the growth is checked too). It returns
// the charge, or the error that refused it (the request is then finished uncharged).
func (f *fixture) budgeted(ctx context.Context, l *Ledger, b Budget, start time.Time, id string, hold, cost decimal.Decimal) (decimal.Decimal, error) {
	r := l.NewRequest(f.p)
	r.Limit(b, start)
	rec := f.record(id, "")
	rec.StartTime = start
	if err := r.Hold(ctx, Price{}, hold); err != nil {
		rec.Status = "refused"
		r.Finish(rec)
		return decimal.Zero, err
	}
	rec.Cost, rec.UsageReliable = decimal.NewNullDecimal(cost), true
	charged, err := r.Settle(ctx, rec)
	if err != nil {
		rec.Status, rec.Cost = "refused", decimal.NullDecimal{}
		r.Finish(rec)
	}
	return charged, err
}

// Concurrent bursts of one key on two replicas against a budget a tenth of the balance:
// the charges never exceed the budget (with answers costing less and more than their holds),
// the balance drops by exactly the charges, the budget is used up (not refused early), and
// the refusals say what the budget is, what is left and when it resets.
func TestBudgetBurstsOnTwoReplicasNeverOverspend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	b := f.setBudget(t, "1", store.BudgetDay)
	ledgers := []*Ledger{NewLedger(f.st, nil), NewLedger(f.st, nil)}
	var served, refused atomic.Int64
	var refusal atomic.Pointer[BudgetError]
	var wg sync.WaitGroup
	now := time.Now()
	for i := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Costs of 0.03..0.12 against holds of 0.08: half the answers grow their hold.
			cost := decimal.New(int64(3+i%10), -2)
			_, err := f.budgeted(ctx, ledgers[i%2], b, now, fmt.Sprint("burst", i), dec("0.08"), cost)
			var be *BudgetError
			switch {
			case err == nil:
				served.Add(1)
			case errors.As(err, &be):
				refused.Add(1)
				refusal.Store(be)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, l := range ledgers {
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	charged, spend := f.keyCharges(t)
	t.Logf("%d served, %d refused; charged %s of a budget of 1", served.Load(), refused.Load(), charged)
	if charged.GreaterThan(dec("1")) {
		t.Fatalf("the key's charges %s exceed its budget of 1", charged)
	}
	if !spend.Equal(charged) {
		t.Fatalf("key_spend counts %s, the ledger charged %s", spend, charged)
	}
	// Without the budget all 80 (about 6) would be charged; with it, refusals come only when
	// less than a hold (0.08) plus what is in flight is left.
	if refused.Load() == 0 || charged.LessThan(dec("0.7")) {
		t.Fatalf("%d refused, %s charged: the budget was not used up, or not enforced", refused.Load(), charged)
	}
	if b := balanceOf(t, f.st, f.p); !b.Equal(dec("10").Sub(charged)) {
		t.Fatalf("balance %s, want 10 less the charges %s", b, charged)
	}
	checkLedger(t, f.st, f.p)
	be := refusal.Load()
	if _, end := Window(store.BudgetDay, now); !be.Budget.Equal(dec("1")) || be.Period != store.BudgetDay || !be.ResetsAt.Equal(end) ||
		// At the refusal the window's charges were at most the final ones: what was left lies
		// between what is left at the end and the whole budget (how much of it requests in
		// flight held then depends on the interleaving, so it bounds nothing here).
		be.Left.LessThan(dec("1").Sub(charged)) || be.Left.GreaterThan(dec("1")) {
		t.Fatalf("refusal %+v (charged %s)", be, charged)
	}
}

// A charge counts in the window its request started: a spent day refuses the day's requests,
// while a request started in the next day is served from the next day's budget, and a request
// started before midnight is charged to the old day even when it settles after it.
func TestBudgetWindowRollsOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	b := f.setBudget(t, "0.5", store.BudgetDay)
	l := NewLedger(f.st, nil)
	t.Cleanup(func() { _ = l.Close(ctx) })
	today, _ := Window(store.BudgetDay, time.Now())
	yesterday := today.Add(-time.Hour) // an hour before today's midnight
	for i := range 5 {
		if _, err := f.budgeted(ctx, l, b, yesterday, fmt.Sprint("y", i), dec("0.1"), dec("0.1")); err != nil {
			t.Fatalf("yesterday's request %d: %v", i, err)
		}
	}
	if _, err := f.budgeted(ctx, l, b, yesterday.Add(time.Minute), "y-over", dec("0.1"), dec("0.1")); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("a sixth request of a spent day: %v, want budget_exceeded", err)
	}
	later := today.Add(time.Hour)
	if _, err := f.budgeted(ctx, l, b, later, "t0", dec("0.1"), dec("0.1")); err != nil {
		t.Fatalf("the next day's first request: %v", err)
	}
	var days []string
	rows, err := f.st.Pool.Query(ctx, `SELECT day::text || ' ' || spent::text FROM key_spend WHERE key_id = $1 ORDER BY day`, f.key)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		days = append(days, s)
	}
	want := []string{yesterday.Format(time.DateOnly) + " 0.500000000", today.Format(time.DateOnly) + " 0.100000000"}
	if fmt.Sprint(days) != fmt.Sprint(want) {
		t.Fatalf("spend by day %v, want %v", days, want)
	}
	checkLedger(t, f.st, f.p)
}

// A budget raised or lowered while requests run on two replicas is in force at once for the
// requests that see it (the snapshot's amount): raised, the key is served again up to the new
// amount; lowered below what was spent, nothing more is charged, on either replica, though
// each holds a lease taken under the old amount.
func TestBudgetRaisedAndLoweredUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	ledgers := []*Ledger{NewLedger(f.st, nil), NewLedger(f.st, nil)}
	t.Cleanup(func() {
		for _, l := range ledgers {
			_ = l.Close(ctx)
		}
	})
	now := time.Now()
	var seq atomic.Int64
	burst := func(b Budget) (served int64) {
		var wg sync.WaitGroup
		var n atomic.Int64
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := f.budgeted(ctx, ledgers[i%2], b, now, fmt.Sprint("r", seq.Add(1)), dec("0.05"), dec("0.05"))
				if err == nil {
					n.Add(1)
				} else if !errors.Is(err, ErrBudgetExceeded) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		return n.Load()
	}
	for _, step := range []struct {
		amount string
		// what the key's charges add up to after the burst: at most the budget, and (raised)
		// less than it by less than two holds (holds in flight on the other replica, when a
		// request asked, are refused rightly).
		low, high string
	}{
		{"0.5", "0.45", "0.5"},
		{"1.25", "1.2", "1.25"}, // raised: served again
		{"0.6", "", ""},         // lowered below the spend: nothing
		{"1.5", "1.45", "1.5"},  // raised again
	} {
		before, _ := f.keyCharges(t)
		b := f.setBudget(t, step.amount, store.BudgetMonth)
		got := burst(b)
		charged, _ := f.keyCharges(t)
		t.Logf("budget %s: %d served, %s charged in all", step.amount, got, charged)
		if step.low == "" {
			if got != 0 || !charged.Equal(before) {
				t.Fatalf("budget lowered to %s below the spend %s: %d served, %s charged", step.amount, before, got, charged)
			}
			continue
		}
		if charged.LessThan(dec(step.low)) || charged.GreaterThan(dec(step.high)) {
			t.Fatalf("budget %s: %s charged in all, want %s..%s", step.amount, charged, step.low, step.high)
		}
	}
	checkLedger(t, f.st, f.p)
}

// A replica that dies while its lease holds most of a key's budget keeps the other replica
// out only until that lease expires (LeaseTTL): then the budget is whole again for it, and
// nothing was spent beyond it.
func TestBudgetOfADeadReplicaReturnsWithinTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	b := f.setBudget(t, "1", store.BudgetTotal)
	dead, alive := NewLedger(f.st, nil), NewLedger(f.st, nil)
	dead.LeaseTTL, alive.LeaseTTL = 2*time.Second, 2*time.Second
	t.Cleanup(func() { _ = alive.Close(ctx) })
	r := dead.NewRequest(f.p)
	r.Limit(b, time.Now())
	if err := r.Hold(ctx, Price{}, dec("0.9")); err != nil {
		t.Fatal(err)
	}
	died := time.Now() // never released, renewed nor closed: the process is gone
	// Refused, and told why: nothing is spent, but the rest is held for requests in flight.
	_, err := f.budgeted(ctx, alive, b, time.Now(), "early", dec("0.5"), dec("0.5"))
	var be *BudgetError
	if !errors.As(err, &be) || !be.Left.Equal(dec("1")) || be.Held.LessThan(dec("0.9")) || !be.ResetsAt.IsZero() {
		t.Fatalf("with 0.9 of 1 leased by another replica, a hold of 0.5: %v (%+v), want budget_exceeded, 1 left, 0.9 of it held", err, be)
	}
	for time.Since(died) < 10*time.Second {
		if _, err = f.budgeted(ctx, alive, b, time.Now(), fmt.Sprint("after", time.Since(died)), dec("0.9"), dec("0.9")); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(died)
	if err != nil || took > dead.LeaseTTL+time.Second {
		t.Fatalf("the budget came back after %s (lease %s): %v", took, dead.LeaseTTL, err)
	}
	if _, err := f.budgeted(ctx, alive, b, time.Now(), "over", dec("0.2"), dec("0.2")); !errors.Is(err, ErrBudgetExceeded) {
		t.Fatalf("0.2 more on a budget of 1 with 0.9 spent: %v", err)
	}
	if charged, _ := f.keyCharges(t); !charged.Equal(dec("0.9")) {
		t.Fatalf("charged %s, want 0.9", charged)
	}
	t.Logf("the budget was whole again %s after the replica died (lease %s)", took, dead.LeaseTTL)
	checkLedger(t, f.st, f.p)
}

// A charge settled by a replica holding no lease (after a partition, or a usage beyond the
// hold) is capped at what is free in its window: the budget less the window's spend less the
// other replicas' leases; a refund gives the window its spend back.
func TestSettleCapsChargesAtTheBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "10")
	b := f.setBudget(t, "1", store.BudgetMonth)
	other := NewLedger(f.st, nil)
	t.Cleanup(func() { _ = other.Close(ctx) })
	r := other.NewRequest(f.p)
	r.Limit(b, time.Now())
	if err := r.Hold(ctx, Price{}, dec("0.7")); err != nil { // other's lease: at least 0.7
		t.Fatal(err)
	}
	leased, err := f.st.BudgetLeased(ctx, newBudgetUse(b, time.Now()).ref)
	if err != nil || leased.LessThan(dec("0.7")) || leased.GreaterThan(dec("1")) {
		t.Fatalf("leased %s: %v", leased, err)
	}
	rec := f.record("partitioned", "0.6")
	res, err := f.st.Settle(ctx, uuid.New(), []store.Settlement{{Record: rec}})
	if err != nil {
		t.Fatal(err)
	}
	want := dec("1").Sub(leased)
	if !res.Charged[0].Decimal.Equal(want) || !res.Capped[0] {
		t.Fatalf("charged %v capped %v, want %s capped (1 less the other replica's lease %s)", res.Charged[0], res.Capped[0], want, leased)
	}
	if _, err := f.st.Refund(ctx, f.p, "partitioned", "refunded"); err != nil {
		t.Fatal(err)
	}
	if charged, spend := f.keyCharges(t); !charged.IsZero() || !spend.IsZero() {
		t.Fatalf("after the refund: charged %s, key_spend %s", charged, spend)
	}
	r.Finish(f.record("held", ""))
	checkLedger(t, f.st, f.p)
}

// BenchmarkBudgetedCharge is BenchmarkChargeConcurrent's commit path for requests of a key
// with a budget beside those of a key without one: the process's CPU per charge (holds, lease
// growths, group commits), the database's, and its transactions per charge, which budgets must
// leave unchanged (they ride on the same leases and group commits).
// go test ./core/billing -run x -bench BudgetedCharge -benchtime 20000x
func BenchmarkBudgetedCharge(b *testing.B) {
	for _, budgeted := range benchOrder() {
		name := "unlimited"
		if budgeted {
			name = "budgeted"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			f := newFixture(b, "1000000")
			budget := Budget{Key: f.key, Amount: dec("1000000"), Period: store.BudgetMonth}
			if budgeted {
				if _, err := f.st.Pool.Exec(ctx, `UPDATE api_keys SET budget_amount = 1000000, budget_period = 'MONTH' WHERE id = $1`, f.key); err != nil {
					b.Fatal(err)
				}
			}
			l := NewLedger(f.st, nil)
			b.Cleanup(func() { _ = l.Close(ctx) })
			hold, cost := dec("0.001"), dec("0.004")
			var next atomic.Int64
			var xact0, xact1 int64
			time.Sleep(1100 * time.Millisecond)
			_ = f.st.Pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&xact0)
			db0, self0 := descendantsCPU(), processCPU()
			b.SetParallelism(32)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := l.NewRequest(f.p)
					if budgeted {
						r.Limit(budget, time.Now())
					}
					if err := r.Hold(ctx, Price{}, hold); err != nil {
						b.Error(err)
						return
					}
					rec := f.record(fmt.Sprint("c", next.Add(1)), "")
					rec.Cost, rec.UsageReliable = decimal.NewNullDecimal(cost), true
					if _, err := r.Settle(ctx, rec); err != nil {
						b.Error(err)
						return
					}
				}
			})
			self, db := processCPU()-self0, descendantsCPU()-db0
			time.Sleep(1100 * time.Millisecond) // the backends report their commits at most once a second
			_ = f.st.Pool.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&xact1)
			n := float64(next.Load())
			b.ReportMetric(float64(self.Microseconds())/n, "cpu-µs/charge")
			if db > 0 {
				b.ReportMetric(float64(db.Microseconds())/n, "db-cpu-µs/charge")
			}
			b.ReportMetric(float64(xact1-xact0)/n, "xact/charge")
			s := l.Stats()
			b.ReportMetric(float64(s.Charges)/float64(max(s.Commits, 1)), "charges/commit")
		})
	}
}

// processCPU is this process's user and system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchOrder runs the budgeted case first when BENCH_BUDGET_FIRST is set: the second case runs
// on a cluster with more rows, which a comparison must rule out.
func benchOrder() []bool {
	if os.Getenv("BENCH_BUDGET_FIRST") != "" {
		return []bool{true, false}
	}
	return []bool{false, true}
}
