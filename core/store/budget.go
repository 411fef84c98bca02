package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/shopspring/decimal"
)

// Key budgets: replicas lease slices of a key's budget in one window (key_budget_leases),
// the twin of the balance leases; see migrations/0012_key_budgets.up.sql.

// ErrBudgetExceeded says what is free of a key's budget in a window cannot cover a lease.
var ErrBudgetExceeded = errors.New("key budget exceeded")

// BudgetRef names a key's budget in one window: lease rows are keyed by it.
type BudgetRef struct {
	Key uuid.UUID
	// Window is the window's start in Unix seconds (a number, so that refs compare and key
	// maps whatever the time's location).
	Window int64
}

// Start is the window's start.
func (r BudgetRef) Start() time.Time { return time.Unix(r.Window, 0).UTC() }

// BudgetRefusal is a budget lease refused: the key's budget, what the window had spent, and
// what other replicas had leased of it (for their requests in flight).
type BudgetRefusal struct {
	Budget, Spent, Others decimal.Decimal
}

func (r *BudgetRefusal) Error() string { return ErrBudgetExceeded.Error() }

// Unwrap makes a refusal ErrBudgetExceeded.
func (r *BudgetRefusal) Unwrap() error { return ErrBudgetExceeded }

// ExtendBudgetLease is ExtendLease for a key's budget in a window: the replica's lease
// becomes at least need and at most want, from the budget less the window's spend less
// every other replica's unexpired lease on it; a *BudgetRefusal (ErrBudgetExceeded) when
// not even need is free. A key without a budget in the database gets what it wants.
func (s *Store) ExtendBudgetLease(ctx context.Context, ref BudgetRef, replica uuid.UUID, need, want decimal.Decimal, ttl time.Duration) (LeaseState, error) {
	var amount, budget, spent, others decimal.NullDecimal
	var version *int64
	err := s.Pool.QueryRow(ctx, `SELECT lease_amount, lease_version, budget, spent, others FROM gateway_extend_budget_lease($1, $2, $3, $4, $5, $6::interval)`,
		ref.Key, replica, ref.Start(), need.String(), want.String(), ttl.String()).Scan(&amount, &version, &budget, &spent, &others)
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "P0002":
		return LeaseState{}, ErrNotFound
	case err != nil:
		return LeaseState{}, fmt.Errorf("extend budget lease: %w", err)
	case !amount.Valid || version == nil:
		return LeaseState{}, &BudgetRefusal{Budget: budget.Decimal, Spent: spent.Decimal, Others: others.Decimal}
	}
	return LeaseState{Amount: amount.Decimal, Version: *version, Present: true}, nil
}

// RenewBudgetLeases is RenewLeases for budget leases.
func (s *Store) RenewBudgetLeases(ctx context.Context, replica uuid.UUID, refs []BudgetRef, ttl time.Duration) (map[BudgetRef]LeaseState, error) {
	keys, windows := make([]uuid.UUID, len(refs)), make([]time.Time, len(refs))
	for i, r := range refs {
		keys[i], windows[i] = r.Key, r.Start()
	}
	rows, err := s.Pool.Query(ctx, `
		UPDATE key_budget_leases l SET expires_at = now() + $4::interval
		FROM unnest($2::uuid[], $3::timestamptz[]) AS t(k, w)
		WHERE l.replica_id = $1 AND l.key_id = t.k AND l.window_start = t.w AND l.expires_at > now()
		RETURNING l.key_id, l.window_start, l.amount, l.version`, replica, keys, windows, ttl.String())
	if err != nil {
		return nil, fmt.Errorf("renew budget leases: %w", err)
	}
	out := map[BudgetRef]LeaseState{}
	for rows.Next() {
		var r BudgetRef
		var w time.Time
		st := LeaseState{Present: true}
		if err := rows.Scan(&r.Key, &w, &st.Amount, &st.Version); err != nil {
			return nil, fmt.Errorf("renew budget leases: %w", err)
		}
		r.Window = w.Unix()
		out[r] = st
	}
	return out, rows.Err()
}

// ReleaseBudgetLease is ReleaseLease for a budget lease.
func (s *Store) ReleaseBudgetLease(ctx context.Context, ref BudgetRef, replica uuid.UUID, version int64) error {
	_, err := s.Pool.Exec(ctx, `DELETE FROM key_budget_leases WHERE key_id = $1 AND window_start = $2 AND replica_id = $3 AND version <= $4`,
		ref.Key, ref.Start(), replica, version)
	return err
}

// BudgetSpent is what the key's charges took in the window of period starting at window.
func (s *Store) BudgetSpent(ctx context.Context, key uuid.UUID, period string, window time.Time) (decimal.Decimal, error) {
	var spent decimal.Decimal
	err := s.Pool.QueryRow(ctx, `SELECT gateway_budget_spent($1, $2, $3)`, key, period, window).Scan(&spent)
	if err != nil {
		return decimal.Zero, fmt.Errorf("budget spent: %w", err)
	}
	return spent, nil
}

// BudgetLeased is the sum of unexpired leases on a key's budget window.
func (s *Store) BudgetLeased(ctx context.Context, ref BudgetRef) (decimal.Decimal, error) {
	var sum decimal.Decimal
	err := s.Pool.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM key_budget_leases WHERE key_id = $1 AND window_start = $2 AND expires_at > now()`,
		ref.Key, ref.Start()).Scan(&sum)
	return sum, err
}

// KeyUsage is what a key's request records add up to since a time.
type KeyUsage struct {
	Requests int64
	Cost     decimal.Decimal
}

// KeyUsageSince counts the key's request records started at or after each of today and
// month (today after month), and sums their costs.
func (s *Store) KeyUsageSince(ctx context.Context, profile, key uuid.UUID, month, today time.Time) (m, d KeyUsage, err error) {
	err = s.Pool.QueryRow(ctx, `
		SELECT count(*), coalesce(sum(cost), 0),
		       count(*) FILTER (WHERE start_time >= $4), coalesce(sum(cost) FILTER (WHERE start_time >= $4), 0)
		FROM requests WHERE profile_id = $1 AND key_id = $2 AND start_time >= $3`, profile, key, month, today).
		Scan(&m.Requests, &m.Cost, &d.Requests, &d.Cost)
	if errors.Is(err, pgx.ErrNoRows) {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("key usage: %w", err)
	}
	return m, d, err
}
