package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// ReserveRequestID records a request before it goes upstream; false means the id was already
// used by this profile (spec 7 duplicate_request_id). The primary key makes two replicas
// racing with one id agree: exactly one insert wins. The record names the replica, so that
// SweepAbandoned can finish it if that replica dies before settling it.
func (s *Store) ReserveRequestID(ctx context.Context, r *RequestRecord, replica uuid.UUID) (bool, error) {
	tag, err := s.Pool.Exec(ctx, `
		INSERT INTO requests (profile_id, request_id, key_id, model_id, endpoint_family, status, currency, start_time, replica_id)
		VALUES ($1, $2, $3, $4, $5, 'in_progress', $6, $7, $8)
		ON CONFLICT (profile_id, request_id) DO NOTHING`,
		r.ProfileID, r.RequestID, r.KeyID, r.Model, r.EndpointFamily, r.Currency, r.StartTime, replica)
	if err != nil {
		return false, fmt.Errorf("reserve request id: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Settlement is one finished request: its record, and its charge when Cost is valid.
type Settlement struct {
	Record RequestRecord
}

// Settled is what a settlement wrote.
type Settled struct {
	// Charged is, per settlement of the batch, the amount taken from the balance: the cost,
	// or less when the cost was above what was free (Capped), or what an earlier settlement
	// of the same record took. Not valid for uncharged records.
	Charged []decimal.NullDecimal
	Capped  []bool
	// Leases are the replica's lease rows on the charged profiles after the charges.
	Leases map[uuid.UUID]LeaseState
}

type recordKey struct {
	profile uuid.UUID
	id      string
}

// Settle writes a batch of finished requests in one transaction: the request records
// (inserted, or completed when the id was reserved earlier), one ledger entry per charged
// request (unique per profile and request id, so a replayed settlement charges nothing
// twice), the balances, and the replica's leases, which shrink by what was charged.
//
// A record that appears twice in the batch is written once (the charged one wins). A charge
// is capped at the balance less the other replicas' unexpired leases: an answer whose usage
// went beyond its hold never takes the balance below zero nor spends money another replica
// has reserved; the record's cost is what was taken.
func (s *Store) Settle(ctx context.Context, replica uuid.UUID, batch []Settlement) (*Settled, error) {
	out := &Settled{Charged: make([]decimal.NullDecimal, len(batch)), Capped: make([]bool, len(batch)), Leases: map[uuid.UUID]LeaseState{}}
	if len(batch) == 0 {
		return out, nil
	}
	// Merge duplicates: index of the kept settlement per record, and the kept ones in order.
	first := make(map[recordKey]int, len(batch))
	alias := make([]int, len(batch))
	var kept []int
	for i, st := range batch {
		k := recordKey{st.Record.ProfileID, st.Record.RequestID}
		j, dup := first[k]
		if !dup {
			first[k], alias[i] = len(kept), len(kept)
			kept = append(kept, i)
			continue
		}
		alias[i] = j
		if !batch[kept[j]].Record.Cost.Valid && st.Record.Cost.Valid {
			kept[j] = i
		}
	}
	n := len(kept)
	var (
		// [16]byte, not uuid.UUID: pgx writes those as binary uuids directly, while uuid.UUID
		// goes through its driver.Valuer as text.
		profiles, keys                  = make([][16]byte, n), make([][16]byte, n)
		ids, models, families, statuses = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		currencies                      = make([]string, n)
		in, cached, write, outT, reason = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		audioIn, audioOut               = make([]int64, n), make([]int64, n)
		reliable                        = make([]bool, n)
		// Text, not decimal values: pgx tries several numeric encodings (each failure building
		// an error) before it finds one for NullDecimal; the database parses the text exactly.
		costs        = make([]*string, n)
		starts, ends = make([]time.Time, n), make([]time.Time, n)
	)
	for j, i := range kept {
		r := batch[i].Record
		profiles[j], keys[j], ids[j], models[j], families[j], statuses[j], currencies[j] = r.ProfileID, r.KeyID, r.RequestID, r.Model, r.EndpointFamily, r.Status, r.Currency
		in[j], cached[j], write[j], outT[j], reason[j] = r.InputTokens, r.CachedInputTokens, r.CacheWriteTokens, r.OutputTokens, r.ReasoningTokens
		audioIn[j], audioOut[j] = r.AudioInputTokens, r.AudioOutputTokens
		reliable[j], starts[j] = r.UsageReliable, r.StartTime
		if r.Cost.Valid {
			c := r.Cost.Decimal.String()
			costs[j] = &c
		}
		if r.EndTime != nil {
			ends[j] = *r.EndTime
		}
	}
	// One statement, one round trip: see gateway_settle in migration 0004.
	rows, err := s.Pool.Query(ctx, `
		SELECT idx, charged, capped, lease_profile, lease_amount, lease_version, lease_present
		FROM gateway_settle($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		replica, profiles, ids, keys, models, families, statuses, currencies, in, cached, write, outT, reason, reliable,
		costs, starts, ends, audioIn, audioOut)
	if err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	defer rows.Close()
	charged, capped := make([]decimal.NullDecimal, n), make([]bool, n)
	for rows.Next() {
		var (
			idx     *int32
			c       decimal.NullDecimal
			cut     *bool
			profile *[16]byte
			amount  decimal.NullDecimal
			version *int64
			present *bool
		)
		if err := rows.Scan(&idx, &c, &cut, &profile, &amount, &version, &present); err != nil {
			return nil, fmt.Errorf("settle: %w", err)
		}
		if idx != nil {
			charged[*idx], capped[*idx] = c, cut != nil && *cut
			continue
		}
		if profile != nil && version != nil {
			out.Leases[uuid.UUID(*profile)] = LeaseState{Amount: amount.Decimal, Version: *version, Present: present != nil && *present}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	for i := range batch {
		out.Charged[i], out.Capped[i] = charged[alias[i]], capped[alias[i]]
	}
	return out, nil
}

// Refund undoes the charge of a request whose answer did not reach the client after all: the
// client went away between the commit and the last event, or the commit looked failed to the
// replica (which then withheld the answer) but may have happened. A cut answer is not charged
// (spec 8). A charge found stays in the ledger and a reversing entry of the same kind follows
// it, so that the charges of a profile still equal its records' costs; the record loses its
// cost and takes the status given. With no charge found, the entry is a zero tombstone that
// keeps a commit arriving late from charging the request. It returns the amount given back;
// a replayed refund gives nothing.
func (s *Store) Refund(ctx context.Context, profile uuid.UUID, requestID, status string) (decimal.Decimal, error) {
	var back decimal.Decimal
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		back = decimal.Zero
		if _, err := tx.Exec(ctx, `SELECT 1 FROM profiles WHERE id = $1 FOR UPDATE`, profile); err != nil {
			return fmt.Errorf("lock profile: %w", err)
		}
		var cost decimal.NullDecimal
		if err := tx.QueryRow(ctx, `SELECT cost FROM requests WHERE profile_id = $1 AND request_id = $2`, profile, requestID).Scan(&cost); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read record: %w", err)
		}
		amount := decimal.Zero
		if cost.Valid {
			amount = cost.Decimal
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO ledger_entries (profile_id, amount, kind, reason, idempotency_key)
			VALUES ($1, $2, 'charge', 'refund: the answer did not reach the client', 'refund ' || $3)
			ON CONFLICT DO NOTHING`, profile, amount.String(), requestID)
		if err != nil {
			return fmt.Errorf("refund entry: %w", err)
		}
		if tag.RowsAffected() == 0 || !cost.Valid {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE profiles SET balance = balance + $2 WHERE id = $1`, profile, amount.String()); err != nil {
			return fmt.Errorf("refund balance: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE requests SET status = $3, cost = NULL WHERE profile_id = $1 AND request_id = $2`, profile, requestID, status); err != nil {
			return fmt.Errorf("refund record: %w", err)
		}
		back = amount
		return nil
	})
	return back, err
}
