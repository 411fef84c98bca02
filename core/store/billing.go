package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// ErrInsufficientBalance says the free balance cannot cover a lease.
var ErrInsufficientBalance = errors.New("insufficient balance")

// Lease is a replica's reservation on a profile's balance.
type Lease struct {
	Amount decimal.Decimal
}

// ExtendLease grows the replica's lease on a profile by up to want, and at least by need,
// from the free balance (balance less every unexpired lease). It fails with
// ErrInsufficientBalance, leaving the lease as it was, when not even need is free. The
// profile row lock serialises lease changes and settlements of all replicas.
func (s *Store) ExtendLease(ctx context.Context, profile, replica uuid.UUID, need, want decimal.Decimal, ttl time.Duration) (decimal.Decimal, error) {
	var lease decimal.Decimal
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var balance, others, mine decimal.Decimal
		if err := tx.QueryRow(ctx, `SELECT balance FROM profiles WHERE id = $1 FOR UPDATE`, profile).Scan(&balance); err != nil {
			return interpretError(err)
		}
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(sum(amount) FILTER (WHERE replica_id <> $2 AND expires_at > now()), 0),
			       coalesce(sum(amount) FILTER (WHERE replica_id = $2), 0)
			FROM balance_leases WHERE profile_id = $1`, profile, replica).Scan(&others, &mine); err != nil {
			return fmt.Errorf("read leases: %w", err)
		}
		free := balance.Sub(others).Sub(mine)
		if free.LessThan(need) {
			return ErrInsufficientBalance
		}
		grant := decimal.Min(want, free)
		lease = mine.Add(grant)
		_, err := tx.Exec(ctx, `
			INSERT INTO balance_leases (profile_id, replica_id, amount, expires_at)
			VALUES ($1, $2, $3, now() + $4::interval)
			ON CONFLICT (profile_id, replica_id) DO UPDATE SET amount = excluded.amount, expires_at = excluded.expires_at`,
			profile, replica, lease, ttl.String())
		return err
	})
	if err != nil {
		return decimal.Zero, err
	}
	return lease, nil
}

// RenewLeases keeps the replica's leases on the given profiles alive.
func (s *Store) RenewLeases(ctx context.Context, replica uuid.UUID, profiles []uuid.UUID, ttl time.Duration) error {
	_, err := s.Pool.Exec(ctx, `UPDATE balance_leases SET expires_at = now() + $3::interval WHERE replica_id = $1 AND profile_id = ANY($2)`,
		replica, profiles, ttl.String())
	return err
}

// ReleaseLease returns a replica's lease on a profile to the pool.
func (s *Store) ReleaseLease(ctx context.Context, profile, replica uuid.UUID) error {
	_, err := s.Pool.Exec(ctx, `DELETE FROM balance_leases WHERE profile_id = $1 AND replica_id = $2`, profile, replica)
	return err
}

// Leased is the sum of unexpired leases on a profile: balance less this is what no replica
// has reserved.
func (s *Store) Leased(ctx context.Context, profile uuid.UUID) (decimal.Decimal, error) {
	var sum decimal.Decimal
	err := s.Pool.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM balance_leases WHERE profile_id = $1 AND expires_at > now()`, profile).Scan(&sum)
	return sum, err
}

// ReserveRequestID records a request before it goes upstream; false means the id was already
// used by this profile (spec 7 duplicate_request_id). The primary key makes two replicas
// racing with one id agree: exactly one insert wins.
func (s *Store) ReserveRequestID(ctx context.Context, r *RequestRecord) (bool, error) {
	tag, err := s.Pool.Exec(ctx, `
		INSERT INTO requests (profile_id, request_id, key_id, model_id, endpoint_family, status, currency, start_time)
		VALUES ($1, $2, $3, $4, $5, 'in_progress', $6, $7)
		ON CONFLICT (profile_id, request_id) DO NOTHING`,
		r.ProfileID, r.RequestID, r.KeyID, r.Model, r.EndpointFamily, r.Currency, r.StartTime)
	if err != nil {
		return false, fmt.Errorf("reserve request id: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Settlement is one finished request: its record, and its charge when Cost is valid.
type Settlement struct {
	Record RequestRecord
}

// Settle writes a batch of finished requests in one transaction: the request records
// (inserted, or completed when the id was reserved earlier), one ledger entry per charged
// request (unique per profile and request id, so a replayed batch charges nothing twice),
// the balances, and the replica's leases, which shrink by what was charged from them.
func (s *Store) Settle(ctx context.Context, replica uuid.UUID, batch []Settlement) error {
	if len(batch) == 0 {
		return nil
	}
	n := len(batch)
	var (
		// [16]byte, not uuid.UUID: pgx writes those as binary uuids directly, while uuid.UUID
		// goes through its driver.Valuer as text.
		profiles, keys                  = make([][16]byte, n), make([][16]byte, n)
		ids, models, families, statuses = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		currencies                      = make([]string, n)
		in, cached, write, out, reason  = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		audioIn, audioOut               = make([]int64, n), make([]int64, n)
		reliable                        = make([]bool, n)
		// Text, not decimal values: pgx tries several numeric encodings (each failure building
		// an error) before it finds one for NullDecimal; the database parses the text exactly.
		costs        = make([]*string, n)
		starts, ends = make([]time.Time, n), make([]time.Time, n)
		locked       []uuid.UUID
	)
	for i, st := range batch {
		r := st.Record
		profiles[i], keys[i], ids[i], models[i], families[i], statuses[i], currencies[i] = r.ProfileID, r.KeyID, r.RequestID, r.Model, r.EndpointFamily, r.Status, r.Currency
		in[i], cached[i], write[i], out[i], reason[i] = r.InputTokens, r.CachedInputTokens, r.CacheWriteTokens, r.OutputTokens, r.ReasoningTokens
		audioIn[i], audioOut[i] = r.AudioInputTokens, r.AudioOutputTokens
		reliable[i], starts[i] = r.UsageReliable, r.StartTime
		if r.Cost.Valid {
			c := r.Cost.Decimal.String()
			costs[i] = &c
		}
		if r.EndTime != nil {
			ends[i] = *r.EndTime
		}
		if r.Cost.Valid && !slices.Contains(locked, r.ProfileID) {
			locked = append(locked, r.ProfileID)
		}
	}
	// Lock charged profiles in id order so that concurrent batches of several replicas cannot
	// deadlock.
	slices.SortFunc(locked, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if len(locked) > 0 {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM profiles WHERE id = ANY($1) ORDER BY id FOR UPDATE`, locked); err != nil {
				return fmt.Errorf("lock profiles: %w", err)
			}
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO requests (profile_id, request_id, key_id, model_id, endpoint_family, status, currency,
				input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
				usage_reliable, cost, start_time, end_time, audio_input_tokens, audio_output_tokens)
			SELECT * FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[],
				$8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[],
				$13::bool[], $14::numeric[], $15::timestamptz[], $16::timestamptz[], $17::bigint[], $18::bigint[])
			ON CONFLICT (profile_id, request_id) DO UPDATE SET
				status = excluded.status, input_tokens = excluded.input_tokens,
				cached_input_tokens = excluded.cached_input_tokens, cache_write_tokens = excluded.cache_write_tokens,
				output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
				usage_reliable = excluded.usage_reliable, cost = excluded.cost, end_time = excluded.end_time,
				audio_input_tokens = excluded.audio_input_tokens, audio_output_tokens = excluded.audio_output_tokens`,
			profiles, ids, keys, models, families, statuses, currencies, in, cached, write, out, reason, reliable, costs, starts, ends, audioIn, audioOut); err != nil {
			return fmt.Errorf("write request records: %w", err)
		}
		if len(locked) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `
			WITH charged AS (
				INSERT INTO ledger_entries (profile_id, amount, kind, reason, request_id)
				SELECT p, -c, 'charge', m || ' ' || f, id
				FROM unnest($1::uuid[], $2::text[], $3::numeric[], $4::text[], $5::text[]) AS t(p, id, c, m, f)
				WHERE c IS NOT NULL
				ON CONFLICT (profile_id, request_id) DO NOTHING
				RETURNING profile_id, amount
			), total AS (
				SELECT profile_id, sum(amount) AS amount FROM charged GROUP BY profile_id
			), balances AS (
				UPDATE profiles p SET balance = p.balance + total.amount FROM total WHERE p.id = total.profile_id
			)
			UPDATE balance_leases l SET amount = greatest(l.amount + total.amount, 0)
			FROM total WHERE l.profile_id = total.profile_id AND l.replica_id = $6`,
			profiles, ids, costs, models, families, replica); err != nil {
			return fmt.Errorf("write charges: %w", err)
		}
		return nil
	})
}
