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

// ErrInsufficientBalance says the free balance cannot cover a lease.
var ErrInsufficientBalance = errors.New("insufficient balance")

// LeaseState is one replica's lease row as a transaction left it. Version grows with every
// write of any lease row, so of two states of one row the newer has the larger version; a
// replica adopts a state only when it is newer than the one it has.
type LeaseState struct {
	Amount  decimal.Decimal
	Version int64
	// Present is false when the row does not exist (never made, released, or cleaned up).
	Present bool
}

// Unavailable tells a failure of the database connection (refused, reset, timed out, server
// shutting down) from an error about the data: the first may succeed when retried as it is,
// the second will fail again.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58": // connection, resources, operator intervention, system
			return true
		}
		return pgErr.Code == "40001" || pgErr.Code == "40P01" // serialization failure, deadlock
	}
	return !errors.Is(err, ErrInsufficientBalance) && !errors.Is(err, ErrNotFound)
}

// ExtendLease sets the replica's lease on a profile to at least need and at most want, from
// the balance less every other replica's unexpired lease. Both are absolute amounts (what
// the replica holds and has charged unsettled, plus the new request), so whatever the row
// held before (grown, shrunk by settlements, expired) the new lease is checked against the
// free balance afresh. It fails with ErrInsufficientBalance, changing nothing, when not even
// need is free. The profile row lock serialises lease changes and settlements of all
// replicas.
func (s *Store) ExtendLease(ctx context.Context, profile, replica uuid.UUID, need, want decimal.Decimal, ttl time.Duration) (LeaseState, error) {
	// One statement, one round trip: see migrations/functions/gateway_extend_lease.sql. Amounts go
	// as text, which the database parses exactly.
	st := LeaseState{Present: true}
	err := s.Pool.QueryRow(ctx, `SELECT lease_amount, lease_version FROM gateway_extend_lease($1, $2, $3, $4, $5::interval)`,
		profile, replica, need.String(), want.String(), ttl.String()).Scan(&st.Amount, &st.Version)
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return LeaseState{}, ErrInsufficientBalance
	case errors.As(err, &pgErr) && pgErr.Code == "P0002": // no_data_found: no such profile
		return LeaseState{}, ErrNotFound
	case err != nil:
		return LeaseState{}, fmt.Errorf("extend lease: %w", err)
	}
	return st, nil
}

// RenewLeases keeps the replica's unexpired leases on the given profiles alive and returns
// the ones it renewed. An expired lease is not revived: other replicas may have leased the
// same money since, so the replica must grow it again through ExtendLease, which checks.
func (s *Store) RenewLeases(ctx context.Context, replica uuid.UUID, profiles []uuid.UUID, ttl time.Duration) (map[uuid.UUID]LeaseState, error) {
	rows, err := s.Pool.Query(ctx, `
		UPDATE balance_leases SET expires_at = now() + $3::interval
		WHERE replica_id = $1 AND profile_id = ANY($2) AND expires_at > now()
		RETURNING profile_id, amount, version`, replica, profiles, ttl.String())
	if err != nil {
		return nil, fmt.Errorf("renew leases: %w", err)
	}
	out := map[uuid.UUID]LeaseState{}
	for rows.Next() {
		var p uuid.UUID
		st := LeaseState{Present: true}
		if err := rows.Scan(&p, &st.Amount, &st.Version); err != nil {
			return nil, fmt.Errorf("renew leases: %w", err)
		}
		out[p] = st
	}
	return out, rows.Err()
}

// ReleaseLease returns a replica's lease on a profile to the pool, unless the row was written
// after the given version (a request grew it again meanwhile).
func (s *Store) ReleaseLease(ctx context.Context, profile, replica uuid.UUID, version int64) error {
	_, err := s.Pool.Exec(ctx, `DELETE FROM balance_leases WHERE profile_id = $1 AND replica_id = $2 AND version <= $3`, profile, replica, version)
	return err
}

// ReleaseAll returns every lease of a replica that is stopping.
func (s *Store) ReleaseAll(ctx context.Context, replica uuid.UUID) error {
	_, err := s.Pool.Exec(ctx, `DELETE FROM balance_leases WHERE replica_id = $1`, replica)
	if err != nil {
		return err
	}
	_, err = s.Pool.Exec(ctx, `DELETE FROM key_budget_leases WHERE replica_id = $1`, replica)
	return err
}

// Leased is the sum of unexpired leases on a profile: balance less this is what no replica
// has reserved (holds on requests in flight are taken from leases).
func (s *Store) Leased(ctx context.Context, profile uuid.UUID) (decimal.Decimal, error) {
	var sum decimal.Decimal
	err := s.Pool.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM balance_leases WHERE profile_id = $1 AND expires_at > now()`, profile).Scan(&sum)
	return sum, err
}

// Heartbeat records that the replica is alive; see SweepAbandoned.
func (s *Store) Heartbeat(ctx context.Context, replica uuid.UUID) error {
	_, err := s.Pool.Exec(ctx, `
		INSERT INTO replicas (id, seen_at) VALUES ($1, now())
		ON CONFLICT (id) DO UPDATE SET seen_at = now()`, replica)
	return err
}

// ReportAlive is Heartbeat that also counts the replicas alive now: those that reported
// within the last within, this one included. Each replica enforces its share of a key's
// limits by this count (core/rpc.KeyLimiter), so it follows replicas starting and stopping
// without configuration. One statement: the count comes with the heartbeat's round trip.
func (s *Store) ReportAlive(ctx context.Context, replica uuid.UUID, within time.Duration) (int, error) {
	var others int
	// The CTE's insert is not visible to the count (one snapshot): the others are counted
	// and this replica added.
	err := s.Pool.QueryRow(ctx, `
		WITH me AS (
			INSERT INTO replicas (id, seen_at) VALUES ($1, now())
			ON CONFLICT (id) DO UPDATE SET seen_at = now())
		SELECT count(*) FROM replicas WHERE id <> $1 AND seen_at > now() - $2::interval`,
		replica, within.String()).Scan(&others)
	if err != nil {
		return 0, fmt.Errorf("report alive: %w", err)
	}
	return others + 1, nil
}

// ForgetReplica removes the row of a replica that is stopping, so that the others stop
// counting it at once (ReportAlive) rather than when its reports grow old.
func (s *Store) ForgetReplica(ctx context.Context, replica uuid.UUID) error {
	if _, err := s.Pool.Exec(ctx, `DELETE FROM replicas WHERE id = $1`, replica); err != nil {
		return fmt.Errorf("forget replica: %w", err)
	}
	return nil
}

// SweepAbandoned finalises what dead replicas left behind: request records still in_progress
// whose replica has not reported for silence become 'abandoned' (the replica died before the
// answer was settled, so nothing was charged), as do records unfinished after a day (their
// replica set them aside), and lease rows expired for longer than silence
// are deleted. It returns the number of records it abandoned.
func (s *Store) SweepAbandoned(ctx context.Context, silence time.Duration) (int64, error) {
	// One statement (data-modifying CTEs, each run once and in full): the sweep runs every
	// few seconds on every replica, idle or not, and four statements were most of what an
	// idle replica sent besides its liveness report.
	var abandoned int64
	err := s.Pool.QueryRow(ctx, `
		WITH abandoned AS (
			UPDATE requests r SET status = '`+StatusAbandoned+`', end_time = now()
			WHERE r.status = '`+StatusInProgress+`' AND r.start_time < now() - $1::interval
			  AND (NOT EXISTS (SELECT 1 FROM replicas x WHERE x.id = r.replica_id AND x.seen_at > now() - $1::interval)
			       -- a record its live replica could not settle (set aside): no request lasts a day
			       OR r.start_time < now() - interval '1 day')
			RETURNING 1),
		leases AS (DELETE FROM balance_leases WHERE expires_at < now() - $1::interval),
		replicas AS (DELETE FROM replicas WHERE seen_at < now() - interval '1 day'),
		budget_leases AS (DELETE FROM key_budget_leases WHERE expires_at < now() - $1::interval)
		SELECT count(*) FROM abandoned`, silence.String()).Scan(&abandoned)
	if err != nil {
		return 0, fmt.Errorf("sweep abandoned records and expired leases: %w", err)
	}
	return abandoned, nil
}
