package store

import (
	"context"
	"fmt"
	"slices"
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
	recs := make([]RequestRecord, n)
	var locked []uuid.UUID
	for j, i := range kept {
		recs[j] = batch[i].Record
		if recs[j].Cost.Valid && !slices.Contains(locked, recs[j].ProfileID) {
			locked = append(locked, recs[j].ProfileID)
		}
	}
	// Lock charged profiles in id order so that concurrent batches of several replicas cannot
	// deadlock.
	slices.SortFunc(locked, func(a, b uuid.UUID) int { return slices.Compare(a[:], b[:]) })
	charged, capped := make([]decimal.NullDecimal, n), make([]bool, n)
	// Two round trips: BEGIN, the locks and the reads in one; the writes and COMMIT in the
	// other. Records without a charge need no lock: one implicit transaction.
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	// A connection left inside a transaction by an error is not reused: the pool closes it.
	defer conn.Release()
	explicit := len(locked) > 0
	fail := func(err error) (*Settled, error) {
		if explicit && !conn.Conn().IsClosed() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_, _ = conn.Exec(rctx, "ROLLBACK")
			cancel()
		}
		return nil, err
	}
	free, existing, err := readFree(ctx, conn.Conn(), replica, locked, recs)
	if err != nil {
		return fail(err)
	}
	// What each charge takes, in batch order, from what is free for it.
	total := map[uuid.UUID]decimal.Decimal{}
	var entries []int
	for j, r := range recs {
		if !r.Cost.Valid {
			continue
		}
		if prior, ok := existing[recordKey{r.ProfileID, r.RequestID}]; ok {
			charged[j] = decimal.NullDecimal{Decimal: prior, Valid: true}
			continue
		}
		f := decimal.Max(free[r.ProfileID], decimal.Zero)
		take := decimal.Min(r.Cost.Decimal, f)
		capped[j] = take.LessThan(r.Cost.Decimal)
		free[r.ProfileID] = f.Sub(take)
		total[r.ProfileID] = total[r.ProfileID].Add(take)
		charged[j] = decimal.NullDecimal{Decimal: take, Valid: true}
		entries = append(entries, j)
	}
	if err := writeSettlement(ctx, conn.Conn(), replica, recs, charged, entries, total, out.Leases, explicit); err != nil {
		return fail(err)
	}
	for i := range batch {
		out.Charged[i], out.Capped[i] = charged[alias[i]], capped[alias[i]]
	}
	return out, nil
}

// readFree locks the charged profiles and reads, in one round trip, what each has free for
// this replica's charges (balance less other replicas' unexpired leases) and the charges of
// the batch's records that an earlier settlement already wrote.
func readFree(ctx context.Context, tx *pgx.Conn, replica uuid.UUID, locked []uuid.UUID, recs []RequestRecord) (map[uuid.UUID]decimal.Decimal, map[recordKey]decimal.Decimal, error) {
	free, existing := map[uuid.UUID]decimal.Decimal{}, map[recordKey]decimal.Decimal{}
	if len(locked) == 0 {
		return free, existing, nil
	}
	var ps [][16]byte
	var ids []string
	for _, r := range recs {
		if r.Cost.Valid {
			ps, ids = append(ps, r.ProfileID), append(ids, r.RequestID)
		}
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SELECT id, balance FROM profiles WHERE id = ANY($1) ORDER BY id FOR UPDATE`, locked)
	b.Queue(`SELECT profile_id, sum(amount) FROM balance_leases
		WHERE profile_id = ANY($1) AND replica_id <> $2 AND expires_at > now() GROUP BY profile_id`, locked, replica)
	b.Queue(`SELECT e.profile_id, e.request_id, -e.amount FROM ledger_entries e
		JOIN unnest($1::uuid[], $2::text[]) AS t(p, id) ON e.profile_id = t.p AND e.request_id = t.id`, ps, ids)
	res := tx.SendBatch(ctx, b)
	defer res.Close()
	if _, err := res.Exec(); err != nil {
		return nil, nil, fmt.Errorf("begin: %w", err)
	}
	scan := func(what string, fn func(pgx.Rows) error) error {
		rows, err := res.Query()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := fn(rows); err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
		}
		return rows.Err()
	}
	var p uuid.UUID
	var amount decimal.Decimal
	if err := scan("lock profiles", func(r pgx.Rows) error {
		err := r.Scan(&p, &amount)
		free[p] = amount
		return err
	}); err != nil {
		return nil, nil, err
	}
	if err := scan("read leases", func(r pgx.Rows) error {
		err := r.Scan(&p, &amount)
		free[p] = free[p].Sub(amount)
		return err
	}); err != nil {
		return nil, nil, err
	}
	var id string
	if err := scan("read earlier charges", func(r pgx.Rows) error {
		err := r.Scan(&p, &id, &amount)
		existing[recordKey{p, id}] = amount
		return err
	}); err != nil {
		return nil, nil, err
	}
	return free, existing, res.Close()
}

// writeSettlement writes records, new ledger entries, balances and leases in one round trip.
func writeSettlement(ctx context.Context, tx *pgx.Conn, replica uuid.UUID, recs []RequestRecord, charged []decimal.NullDecimal,
	entries []int, total map[uuid.UUID]decimal.Decimal, leases map[uuid.UUID]LeaseState, explicit bool) error {
	n := len(recs)
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
	)
	for i, r := range recs {
		profiles[i], keys[i], ids[i], models[i], families[i], statuses[i], currencies[i] = r.ProfileID, r.KeyID, r.RequestID, r.Model, r.EndpointFamily, r.Status, r.Currency
		in[i], cached[i], write[i], out[i], reason[i] = r.InputTokens, r.CachedInputTokens, r.CacheWriteTokens, r.OutputTokens, r.ReasoningTokens
		audioIn[i], audioOut[i] = r.AudioInputTokens, r.AudioOutputTokens
		reliable[i], starts[i] = r.UsageReliable, r.StartTime
		if charged[i].Valid {
			c := charged[i].Decimal.String()
			costs[i] = &c
		}
		if r.EndTime != nil {
			ends[i] = *r.EndTime
		}
	}
	b := &pgx.Batch{}
	b.Queue(`
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
			audio_input_tokens = excluded.audio_input_tokens, audio_output_tokens = excluded.audio_output_tokens,
			replica_id = NULL
		-- A charged record is final: a later uncharged settlement of the same request (its
		-- charge's commit looked failed, but was not) does not undo it.
		WHERE requests.cost IS NULL OR excluded.cost IS NOT NULL`,
		profiles, ids, keys, models, families, statuses, currencies, in, cached, write, out, reason, reliable, costs, starts, ends, audioIn, audioOut)
	if len(entries) > 0 {
		var eps [][16]byte
		var eids, eamounts, ereasons []string
		for _, j := range entries {
			eps, eids = append(eps, recs[j].ProfileID), append(eids, recs[j].RequestID)
			eamounts, ereasons = append(eamounts, charged[j].Decimal.Neg().String()), append(ereasons, recs[j].Model+" "+recs[j].EndpointFamily)
		}
		b.Queue(`INSERT INTO ledger_entries (profile_id, amount, kind, reason, request_id)
			SELECT p, a, 'charge', r, id FROM unnest($1::uuid[], $2::text[], $3::numeric[], $4::text[]) AS t(p, id, a, r)`,
			eps, eids, eamounts, ereasons)
		var tps [][16]byte
		var tamounts []string
		for p, a := range total {
			tps, tamounts = append(tps, p), append(tamounts, a.String())
		}
		b.Queue(`UPDATE profiles p SET balance = p.balance - t.a FROM unnest($1::uuid[], $2::numeric[]) AS t(id, a) WHERE p.id = t.id`, tps, tamounts)
		b.Queue(`UPDATE balance_leases l SET amount = greatest(l.amount - t.a, 0), version = nextval('balance_lease_version')
			FROM unnest($1::uuid[], $2::numeric[]) AS t(id, a) WHERE l.profile_id = t.id AND l.replica_id = $3
			RETURNING l.profile_id, l.amount, l.version`, tps, tamounts, replica)
		// Taken under the profile locks: a later write of these leases has a larger version.
		b.Queue(`SELECT nextval('balance_lease_version')`)
	}
	if explicit {
		b.Queue(`COMMIT`)
	}
	res := tx.SendBatch(ctx, b)
	defer res.Close()
	if _, err := res.Exec(); err != nil {
		return fmt.Errorf("write request records: %w", err)
	}
	commit := func() error {
		if explicit {
			if _, err := res.Exec(); err != nil {
				return fmt.Errorf("commit: %w", err)
			}
		}
		return res.Close()
	}
	if len(entries) == 0 {
		return commit()
	}
	if _, err := res.Exec(); err != nil {
		return fmt.Errorf("write charges: %w", err)
	}
	if _, err := res.Exec(); err != nil {
		return fmt.Errorf("update balances: %w", err)
	}
	rows, err := res.Query()
	if err != nil {
		return fmt.Errorf("shrink leases: %w", err)
	}
	for rows.Next() {
		var p uuid.UUID
		st := LeaseState{Present: true}
		if err := rows.Scan(&p, &st.Amount, &st.Version); err != nil {
			rows.Close()
			return fmt.Errorf("shrink leases: %w", err)
		}
		leases[p] = st
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("shrink leases: %w", err)
	}
	// A charged profile without a lease row: the replica has no lease there (any more).
	var stamp int64
	if err := res.QueryRow().Scan(&stamp); err != nil {
		return fmt.Errorf("lease version: %w", err)
	}
	for p := range total {
		if _, ok := leases[p]; !ok {
			leases[p] = LeaseState{Version: stamp}
		}
	}
	return commit()
}
