package gatewaytest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
)

var poolMu sync.Mutex

// Pool is a connection pool on the replica's database (one per replica, closed when the test
// ends), for checks no client route shows.
func (g *Gateway) Pool() *pgxpool.Pool {
	g.t.Helper()
	poolMu.Lock()
	defer poolMu.Unlock()
	if g.pool == nil {
		pool, err := pgxpool.New(context.Background(), g.DatabaseURL)
		if err != nil {
			g.t.Fatalf("open pool: %v", err)
		}
		g.pool = pool
		g.t.Cleanup(pool.Close)
	}
	return g.pool
}

// LedgerOf reads a profile's balance, the sum of its ledger entries and its number of charges.
func LedgerOf(t testing.TB, pool *pgxpool.Pool, pid string) (balance, sum decimal.Decimal, charges int) {
	t.Helper()
	ctx := context.Background()
	id := uuid.MustParse(pid)
	// One statement, one snapshot: a settlement committing in between cannot split the view.
	if err := pool.QueryRow(ctx, `
		SELECT p.balance, coalesce(sum(e.amount), 0), count(e.id) FILTER (WHERE e.kind = 'charge')
		FROM profiles p LEFT JOIN ledger_entries e ON e.profile_id = p.id
		WHERE p.id = $1 GROUP BY p.balance`, id).Scan(&balance, &sum, &charges); err != nil {
		t.Fatal(err)
	}
	return balance, sum, charges
}

// Settled waits until the profile has n charges, checking on every read that the balance is
// the sum of the entries. The contract allows 2 s; the wait is generous because a loaded
// machine can delay the settlement tick itself.
func Settled(t testing.TB, pool *pgxpool.Pool, pid string, n int) (balance decimal.Decimal) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, sum, charges := LedgerOf(t, pool, pid)
		if !b.Equal(sum) {
			t.Fatalf("balance %s is not the sum of entries %s", b, sum)
		}
		if charges == n {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d charges settled, want %d", charges, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// IDs are the key field of each object in a list answer's field.
func IDs(t testing.TB, list map[string]any, field, key string) []string {
	t.Helper()
	out := []string{}
	items, _ := list[field].([]any)
	for _, it := range items {
		out = append(out, it.(map[string]any)[key].(string))
	}
	return out
}

// CheckMoney is the ledger invariant for one profile: balance = sum of entries and never
// below zero, charges = the records' costs, no record left in_progress. It returns the
// balance.
func CheckMoney(t testing.TB, pool *pgxpool.Pool, pid string) decimal.Decimal {
	t.Helper()
	var bal, sum, charges, costs decimal.Decimal
	var inProgress int
	// Records without a charge are written in the background, within the contract's 2 s.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM requests WHERE profile_id = $1 AND status = 'in_progress'`,
			uuid.MustParse(pid)).Scan(&inProgress); err != nil {
			t.Fatal(err)
		}
		if inProgress == 0 || time.Now().After(deadline) {
			break
		}
	}
	if err := pool.QueryRow(context.Background(), `
		SELECT p.balance,
		       (SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE profile_id = p.id),
		       (SELECT coalesce(-sum(amount), 0) FROM ledger_entries WHERE profile_id = p.id AND kind = 'charge'),
		       (SELECT coalesce(sum(cost), 0) FROM requests WHERE profile_id = p.id),
		       (SELECT count(*) FROM requests WHERE profile_id = p.id AND status = 'in_progress')
		FROM profiles p WHERE p.id = $1`, uuid.MustParse(pid)).Scan(&bal, &sum, &charges, &costs, &inProgress); err != nil {
		t.Fatal(err)
	}
	if !bal.Equal(sum) || bal.IsNegative() || !charges.Equal(costs) || inProgress != 0 {
		t.Fatalf("balance %s, entries %s, charges %s, records' costs %s, %d in progress", bal, sum, charges, costs, inProgress)
	}
	return bal
}
