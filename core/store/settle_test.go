package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// The set-based gateway_settle (migrations/functions) agrees with the per-record loop it replaced
// (migration 0004's, kept as the reference in testdata/gateway_settle_loop.sql): the same random batches, replays, withheld
// charges and leases are settled in two databases, one with each function, and every result
// and every row written must be the same. gateway_settle has three statements for this: the
// plain one for batches whose keys have no budget and whose charges all fit, unreplayed and not
// withheld; the capped one for the other batches without a budget; and one with the budget parts,
// which a budget too large to bind takes. Each must agree, and each must have run (the function
// says which at DEBUG).
func TestSettleAgreesWithTheLoopItReplaced(t *testing.T) {
	t.Parallel()
	for _, budget := range []bool{false, true} {
		t.Run(fmt.Sprint("budget=", budget), func(t *testing.T) {
			t.Parallel()
			settleAgreesWithTheLoop(t, budget)
		})
	}
}

func settleAgreesWithTheLoop(t *testing.T, budget bool) {
	ctx := context.Background()
	reference, err := os.ReadFile("testdata/gateway_settle_loop.sql")
	if err != nil {
		t.Fatal(err)
	}
	set, url := open(t)
	ref, _ := open(t)
	// The function names the statement it ran in a DEBUG message, which a connection asking for
	// them hears as a notice.
	var mu sync.Mutex
	forms := map[string]int{}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["client_min_messages"] = "debug1"
	cfg.ConnConfig.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if form, ok := strings.CutPrefix(n.Message, "gateway_settle: "); ok {
			mu.Lock()
			forms[form]++
			mu.Unlock()
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	set = &store.Store{Pool: pool}
	if _, err := ref.Pool.Exec(ctx, string(reference)); err != nil {
		t.Fatalf("reference function: %v", err)
	}

	replica, other := uuid.New(), uuid.New()
	profiles := []uuid.UUID{uuid.New(), uuid.New(), uuid.New()}
	key := uuid.New()
	for _, st := range []*store.Store{set, ref} {
		for i, p := range profiles {
			if _, err := st.Pool.Exec(ctx, `INSERT INTO profiles (id, currency, balance) VALUES ($1, 'RUB', $2)`, p, []string{"150", "7.5", "0"}[i]); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Pool.Exec(ctx, `INSERT INTO ledger_entries (profile_id, amount, kind) VALUES ($1, (SELECT balance FROM profiles WHERE id = $1), 'credit')`, p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.Pool.Exec(ctx, `INSERT INTO api_keys (id, profile_id, prefix, secret_hash) VALUES ($1, $2, 'x', $3)`, key, profiles[0], key[:]); err != nil {
			t.Fatal(err)
		}
		if budget && st == set { // the loop knows nothing of budgets
			if _, err := st.Pool.Exec(ctx, `UPDATE api_keys SET budget_amount = 1000000, budget_period = 'MONTH' WHERE id = $1`, key); err != nil {
				t.Fatal(err)
			}
		}
		// Another replica's unexpired lease (not free), an expired one (free again), and this
		// replica's own lease, which shrinks with its charges.
		if _, err := st.Pool.Exec(ctx, `INSERT INTO balance_leases (profile_id, replica_id, amount, expires_at) VALUES
			($1, $4, 5, now() + interval '1 hour'), ($2, $4, 3, now() - interval '1 second'), ($1, $3, 4, now() + interval '1 hour')`,
			profiles[0], profiles[1], replica, other); err != nil {
			t.Fatal(err)
		}
	}

	rng := rand.New(rand.NewPCG(13, 17))
	start := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	charges := 0
	for round := range 120 {
		batch := make([]store.Settlement, 1+rng.IntN(12))
		for i := range batch {
			// Every third round has fresh ids only (no replay) of the two profiles with money, as a
			// gateway's batches mostly do: the plain statement's batches, while their money lasts
			// (the first profile's does, the second's runs out).
			id, p := fmt.Sprint("r", rng.IntN(120)), profiles[rng.IntN(len(profiles))]
			if round%3 == 2 {
				id, p = fmt.Sprint("f", round, "-", i), profiles[rng.IntN(4)/3]
			}
			r := store.RequestRecord{
				ProfileID: p, RequestID: id, KeyID: key,
				Model: "m", EndpointFamily: "chat", Status: "ok", Currency: "RUB", InputTokens: int64(rng.IntN(5000)),
				StartTime: start.Add(time.Duration(round) * time.Second),
			}
			if rng.IntN(5) > 0 {
				r.Cost = decimal.NewNullDecimal(decimal.New(int64(1+rng.IntN(900)), -3))
				charges++
			}
			batch[i] = store.Settlement{Record: r}
		}
		// Now and then a request is given up on before its charge arrives (withheld).
		if rng.IntN(3) == 0 && round%3 != 2 {
			p, id := profiles[rng.IntN(len(profiles))], fmt.Sprint("r", 40+rng.IntN(80))
			for _, st := range []*store.Store{set, ref} {
				if _, err := st.Refund(ctx, p, id, "refunded"); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := set.Settle(ctx, replica, batch)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		want, err := ref.Settle(ctx, replica, batch)
		if err != nil {
			t.Fatalf("round %d, reference: %v", round, err)
		}
		if !reflect.DeepEqual(amounts(got.Charged), amounts(want.Charged)) || !reflect.DeepEqual(got.Capped, want.Capped) {
			t.Fatalf("round %d: charged %v capped %v, the loop charged %v capped %v", round, amounts(got.Charged), got.Capped, amounts(want.Charged), want.Capped)
		}
		if g, w := leases(got.Leases), leases(want.Leases); !reflect.DeepEqual(g, w) {
			t.Fatalf("round %d: leases %v, the loop's %v", round, g, w)
		}
	}
	for _, q := range []string{
		`SELECT id::text || ' ' || balance::text FROM profiles ORDER BY id`,
		`SELECT profile_id::text || ' ' || amount::text || ' ' || kind || ' ' || reason || ' ' || coalesce(request_id, idempotency_key, '') FROM ledger_entries ORDER BY id`,
		`SELECT profile_id::text || ' ' || request_id || ' ' || status || ' ' || coalesce(cost::text, '-') || ' ' || input_tokens FROM requests ORDER BY profile_id, request_id`,
		`SELECT profile_id::text || ' ' || replica_id::text || ' ' || amount::text FROM balance_leases ORDER BY profile_id, replica_id`,
	} {
		g, w := rowsOf(t, set, q), rowsOf(t, ref, q)
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s\nset-based:\n%v\nloop:\n%v", q, g, w)
		}
	}
	// The comparison saw what it is about: charges taken, some capped to nothing, some
	// replayed, and some withheld (recorded 'unavailable' by the settlement itself).
	var capped, taken, withheld int
	if err := set.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE amount = 0), count(*) FILTER (WHERE amount < 0) FROM ledger_entries WHERE kind = 'charge' AND request_id IS NOT NULL`).Scan(&capped, &taken); err != nil {
		t.Fatal(err)
	}
	if err := set.Pool.QueryRow(ctx, `SELECT count(*) FROM requests WHERE status = 'unavailable'`).Scan(&withheld); err != nil {
		t.Fatal(err)
	}
	if capped == 0 || taken == 0 || taken+capped >= charges || withheld == 0 {
		t.Fatalf("%d charges settled: %d taken, %d capped to nothing, %d withheld (want each, and replays)", charges, taken, capped, withheld)
	}
	// Each statement ran: a key with a budget takes the budget statement every time.
	mu.Lock()
	defer mu.Unlock()
	if want := map[bool][]string{false: {"plain", "capped"}, true: {"budgets"}}[budget]; len(forms) != len(want) || forms[want[0]] == 0 || forms[want[len(want)-1]] == 0 {
		t.Fatalf("statements run: %v, want %v", forms, want)
	}
	// The budget's statement counted the key's spend; the other wrote none.
	var spent decimal.Decimal
	if err := set.Pool.QueryRow(ctx, `SELECT coalesce(sum(spent), 0) FROM key_spend WHERE key_id = $1`, key).Scan(&spent); err != nil {
		t.Fatal(err)
	}
	if budget != spent.IsPositive() {
		t.Fatalf("budget %v: key_spend %s", budget, spent)
	}
}

func amounts(ds []decimal.NullDecimal) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		if d.Valid {
			out[i] = d.Decimal.String()
		}
	}
	return out
}

func leases(ls map[uuid.UUID]store.LeaseState) map[uuid.UUID]string {
	out := map[uuid.UUID]string{}
	for p, l := range ls {
		out[p] = fmt.Sprint(l.Amount.String(), " ", l.Present)
	}
	return out
}

func rowsOf(t *testing.T, st *store.Store, q string) []string {
	t.Helper()
	rows, err := st.Pool.Query(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A connection string that turns prepared statements off (default_query_exec_mode, as behind
// PgBouncer in transaction pooling) gets a settlement that prepares none, with the same
// result; by default the settlement's statement is prepared once on the connection.
func TestSettleHonoursTheQueryExecMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.DatabaseURL(t)
	for _, c := range []struct {
		mode     string
		prepared int
	}{
		{"", 1},
		{"&default_query_exec_mode=exec", 0},
	} {
		st, err := store.Open(ctx, url+"&pool_max_conns=1"+c.mode)
		if err != nil {
			t.Fatal(err)
		}
		p := uuid.New()
		if _, err := st.Pool.Exec(ctx, `INSERT INTO profiles (id, currency, balance) VALUES ($1, 'RUB', 10)`, p); err != nil {
			t.Fatal(err)
		}
		rec := store.RequestRecord{ProfileID: p, RequestID: "r1", KeyID: uuid.New(), Model: "m", EndpointFamily: "chat",
			Status: "ok", Currency: "RUB", Cost: decimal.NewNullDecimal(decimal.RequireFromString("0.25")), StartTime: time.Now()}
		got, err := st.Settle(ctx, uuid.New(), []store.Settlement{{Record: rec}})
		if err != nil {
			t.Fatalf("mode %q: %v", c.mode, err)
		}
		if !got.Charged[0].Valid || !got.Charged[0].Decimal.Equal(decimal.RequireFromString("0.25")) {
			t.Errorf("mode %q: charged %v, want 0.25", c.mode, got.Charged[0])
		}
		var balance decimal.Decimal
		var prepared int
		if err := st.Pool.QueryRow(ctx, `SELECT (SELECT balance FROM profiles WHERE id = $1), (SELECT count(*) FROM pg_prepared_statements WHERE name = 'gateway_settle')`, p).Scan(&balance, &prepared); err != nil {
			t.Fatal(err)
		}
		if !balance.Equal(decimal.RequireFromString("9.75")) || prepared != c.prepared {
			t.Errorf("mode %q: balance %s and %d prepared settlements, want 9.75 and %d", c.mode, balance, prepared, c.prepared)
		}
		st.Close()
	}
}
