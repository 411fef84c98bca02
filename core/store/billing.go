package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"
)

// ReserveRequestID takes a client-sent request id and records its request before it goes
// upstream; false means the id was already taken, by any profile (spec 7
// duplicate_request_id; contract: an id is taken whatever its route, key or profile). One
// statement, one round trip: the id goes into request_ids (keyed by the id alone) and the
// record into requests only when that insert won. The primary keys make two replicas racing
// with one id agree: exactly one insert wins. The record names the replica, so that
// SweepAbandoned can finish it if that replica dies before settling it.
func (s *Store) ReserveRequestID(ctx context.Context, r *RequestRecord, replica uuid.UUID) (bool, error) {
	tag, err := s.Pool.Exec(ctx, `
		WITH taken AS (
			INSERT INTO request_ids (request_id) VALUES ($2) ON CONFLICT DO NOTHING RETURNING request_id)
		INSERT INTO requests (profile_id, request_id, key_id, model_id, endpoint_family, status, currency, start_time, replica_id)
		SELECT $1::uuid, request_id, $3::uuid, $4::text, $5::text, '`+StatusInProgress+`', $6::text, $7::timestamptz, $8::uuid FROM taken
		ON CONFLICT (profile_id, request_id) DO NOTHING`,
		r.ProfileID, r.RequestID, r.KeyID, r.Model, r.EndpointFamily, r.Currency, r.StartTime, replica)
	if err != nil {
		return false, fmt.Errorf("reserve request id: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// TakeRequestID takes a client's request id without a record: the request was refused after
// its key passed, and its id is used all the same (contract).
func (s *Store) TakeRequestID(ctx context.Context, id string) error {
	if _, err := s.Pool.Exec(ctx, `INSERT INTO request_ids (request_id) VALUES ($1) ON CONFLICT DO NOTHING`, id); err != nil {
		return fmt.Errorf("take request id: %w", err)
	}
	return nil
}

// Settlement is one finished request: its record, and its charge when Cost is valid.
type Settlement struct {
	Record RequestRecord
	// CostText is Record.Cost as decimal.Decimal.String writes it, when the caller has it
	// already (the ledger writes a batch's costs into one string); empty: Settle writes it.
	CostText string
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
	// BudgetLeases are the replica's lease rows on the charged budget windows after the
	// charges.
	BudgetLeases map[BudgetRef]LeaseState
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
	out := &Settled{Charged: make([]decimal.NullDecimal, len(batch)), Capped: make([]bool, len(batch)), Leases: map[uuid.UUID]LeaseState{}, BudgetLeases: map[BudgetRef]LeaseState{}}
	if len(batch) == 0 {
		return out, nil
	}
	x := getScratch()
	defer x.put(len(batch))
	// Merge duplicates: index of the kept settlement per record, and the kept ones in order.
	first := x.first
	alias := grow(x.alias, len(batch))
	x.alias = alias
	kept := x.kept[:0]
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
	x.kept = kept
	rec := func(j int) *RequestRecord { return &batch[kept[j]].Record }
	n := len(kept)
	costs := grow(x.costs, n)
	x.costs = costs
	for j := range n {
		if r := rec(j); r.Cost.Valid {
			costs[j] = batch[kept[j]].CostText
			if costs[j] == "" {
				costs[j] = r.Cost.Decimal.String()
			}
		}
	}
	x.w = settleArgs(x.w, replica, n, rec, costs)
	args := x.w.args

	c, err := s.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("settle: %w", err)
	}
	defer c.Release()
	var rr *pgconn.ResultReader
	pc := c.Conn().PgConn()
	if c.Conn().Config().DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
		// Prepared once per connection (pgx keeps it by name), then one round trip per batch.
		sd, err := c.Conn().Prepare(ctx, "gateway_settle", settleSQL)
		if err != nil {
			return nil, fmt.Errorf("settle: %w", err)
		}
		lendBuffer(pc, settleMessageBytes(args))
		rr = pc.ExecPrepared(ctx, sd.Name, args, settleArgFormats, settleResultFormats)
	} else {
		// The connection string asked for no prepared statements (default_query_exec_mode,
		// e.g. behind PgBouncer in transaction pooling): the same statement, unnamed, still
		// one round trip.
		lendBuffer(pc, settleMessageBytes(args))
		rr = pc.ExecParams(ctx, settleSQL, args, settleArgOIDs, settleArgFormats, settleResultFormats)
	}
	charged, capped := grow(x.charged, n), grow(x.capped, n)
	x.charged, x.capped = charged, capped
	readErr := readSettled(rr, rec, costs, charged, capped, out)
	// Close drains what a failed read left, and reports the statement's own error.
	if _, err := rr.Close(); err != nil || readErr != nil {
		return nil, fmt.Errorf("settle: %w", cmp.Or(readErr, err))
	}
	for i := range batch {
		out.Charged[i], out.Capped[i] = charged[alias[i]], capped[alias[i]]
	}
	return out, nil
}

// settleArgs writes gateway_settle's arguments for the n records rec gives, costs their
// costs' texts, into w's buffer (made again when it is too small): the replica, then an array
// per column, in one buffer (w.args).
func settleArgs(w arrayWriter, replica uuid.UUID, n int, rec func(int) *RequestRecord, costs []string) arrayWriter {
	if need := settleArgsBytes(n, rec, costs); cap(w.buf) < need {
		w.buf = make([]byte, 0, need)
	}
	w.buf, w.args = w.buf[:0], w.args[:0]
	w.args = append(w.args, replica[:])
	w.uuids(n, func(j int) uuid.UUID { return rec(j).ProfileID })
	w.texts(n, func(j int) string { return rec(j).RequestID })
	w.uuids(n, func(j int) uuid.UUID { return rec(j).KeyID })
	w.texts(n, func(j int) string { return rec(j).Model })
	w.texts(n, func(j int) string { return rec(j).EndpointFamily })
	w.texts(n, func(j int) string { return rec(j).Status })
	w.texts(n, func(j int) string { return rec(j).Currency })
	w.int8s(n, func(j int) int64 { return rec(j).InputTokens })
	w.int8s(n, func(j int) int64 { return rec(j).CachedInputTokens })
	w.int8s(n, func(j int) int64 { return rec(j).CacheWriteTokens })
	w.int8s(n, func(j int) int64 { return rec(j).OutputTokens })
	w.int8s(n, func(j int) int64 { return rec(j).ReasoningTokens })
	w.bools(n, func(j int) bool { return rec(j).UsageReliable })
	w.numericTexts(n, func(j int) (string, bool) { return costs[j], rec(j).Cost.Valid })
	w.timestamptzs(n, func(j int) time.Time { return rec(j).StartTime })
	w.timestamptzs(n, func(j int) time.Time {
		if e := rec(j).EndTime; e != nil {
			return *e
		}
		return time.Time{}
	})
	w.int8s(n, func(j int) int64 { return rec(j).AudioInputTokens })
	w.int8s(n, func(j int) int64 { return rec(j).AudioOutputTokens })
	w.jsonbs(n, func(j int, b []byte) []byte { return appendAttempts(b, rec(j).Attempts) })
	return w
}

// readSettled reads gateway_settle's rows: per record (idx set) what was charged and whether
// it was capped, and per charged profile the replica's lease after the charges.
func readSettled(rr *pgconn.ResultReader, rec func(int) *RequestRecord, costs []string, charged []decimal.NullDecimal, capped []bool, out *Settled) error {
	for rr.NextRow() {
		v := rr.Values()
		if len(v) != len(settleResultFormats) {
			return fmt.Errorf("%d columns", len(v))
		}
		if idx, ok := wireInt(v[0]); ok {
			if idx < 0 || idx >= int64(len(charged)) {
				return fmt.Errorf("row for record %d of %d", idx, len(charged))
			}
			capped[idx] = wireBool(v[2])
			if v[1] == nil {
				continue
			}
			// Taken in full, the database echoes the cost's text: no need to parse it back.
			if r := rec(int(idx)); r.Cost.Valid && string(v[1]) == costs[idx] {
				charged[idx] = r.Cost
				continue
			}
			d, err := decimal.NewFromString(string(v[1]))
			if err != nil {
				return fmt.Errorf("charged %q: %w", v[1], err)
			}
			charged[idx] = decimal.NullDecimal{Decimal: d, Valid: true}
			continue
		}
		version, ok := wireInt(v[5])
		if len(v[3]) != 16 || !ok {
			continue
		}
		var amount decimal.Decimal
		if v[4] != nil {
			var err error
			if amount, err = decimal.NewFromString(string(v[4])); err != nil {
				return fmt.Errorf("lease amount %q: %w", v[4], err)
			}
		}
		st := LeaseState{Amount: amount, Version: version, Present: wireBool(v[6])}
		if v[7] != nil {
			w, ok := wireTime(v[7])
			if !ok {
				return fmt.Errorf("lease window %x", v[7])
			}
			out.BudgetLeases[BudgetRef{Key: uuid.UUID(v[3]), Window: w.Unix()}] = st
			continue
		}
		out.Leases[uuid.UUID(v[3])] = st
	}
	return nil
}

// One statement, one round trip: see migrations/functions/gateway_settle.sql.
const settleSQL = `SELECT idx, charged, capped, lease_profile, lease_amount, lease_version, lease_present, lease_window
	FROM gateway_settle($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`

var (
	// The arguments' types, for the unnamed statement: the replica, then the arrays.
	settleArgOIDs = []uint32{pgtype.UUIDOID, pgtype.UUIDArrayOID, pgtype.TextArrayOID, pgtype.UUIDArrayOID,
		pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID, pgtype.TextArrayOID,
		pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.Int8ArrayOID,
		pgtype.BoolArrayOID, pgtype.NumericArrayOID, pgtype.TimestamptzArrayOID, pgtype.TimestamptzArrayOID,
		pgtype.Int8ArrayOID, pgtype.Int8ArrayOID, pgtype.JSONBArrayOID}
	// Every argument binary but the costs ($15), which go as numeric[] text.
	settleArgFormats = []int16{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1}
	// Numbers as text (charged, lease_amount), the rest binary.
	settleResultFormats = []int16{1, 0, 1, 1, 0, 1, 1, 1}
)

// settleScratch is what a settlement works with and gives up when it returns, used again by
// the next (settleScratches): a group commit of 64 charges made some 25 KB of it every time.
type settleScratch struct {
	first   map[recordKey]int
	alias   []int
	kept    []int
	costs   []string
	charged []decimal.NullDecimal
	capped  []bool
	w       arrayWriter
}

var settleScratches = sync.Pool{New: func() any { return &settleScratch{first: map[recordKey]int{}} }}

func getScratch() *settleScratch { return settleScratches.Get().(*settleScratch) }

// maxScratchRecords bounds the settlements whose scratch is kept: a backlog settled after an
// outage is rare, and its map and buffer would stay that large.
const maxScratchRecords = 1024

// put clears what refers to the records (their strings and costs) and gives x back, unless
// it served a settlement of more than maxScratchRecords.
func (x *settleScratch) put(records int) {
	if records > maxScratchRecords {
		return
	}
	clear(x.first)
	clear(x.costs)
	clear(x.charged)
	clear(x.w.args)
	settleScratches.Put(x)
}

// grow is s with length n, its contents zero, made again when s is too short.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// settleArgsBytes is what settleArgs writes for the records, at most (a JSON escape in an
// attempt's names aside): its buffer is made once at that size, where a guess per record
// left the attempts' JSON, written last, to grow and copy the whole buffer, every array
// before it kept alive by its argument.
func settleArgsBytes(n int, rec func(int) *RequestRecord, costs []string) int {
	const (
		header     = 20                     // an array's: ndim, flags, OID, length, lower bound
		fixed      = 2*(4+16) + 9*(4+8) + 5 // per record: two uuids, nine int8s and times, a bool
		perAttempt = len(`{"provider":"","upstream_model":"","status":,"error_code":"","duration_ms":},`) + 2*20
	)
	size := 16 + 19*header + 2 + n*(fixed+5*4+1+4+1+2)
	for j := range n {
		r := rec(j)
		size += len(r.RequestID) + len(r.Model) + len(r.EndpointFamily) + len(r.Status) + len(r.Currency) + max(len(costs[j]), len("NULL"))
		for _, a := range r.Attempts {
			size += perAttempt + len(a.Provider) + len(a.UpstreamModel) + len(a.ErrorCode)
		}
	}
	return size
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
		// The key's budget window gets the charge back too (gateway_settle counted it on the
		// day the request started).
		if _, err := tx.Exec(ctx, `
			UPDATE key_spend s SET spent = s.spent - $3 FROM requests r
			WHERE r.profile_id = $1 AND r.request_id = $2 AND s.key_id = r.key_id AND s.day = (r.start_time AT TIME ZONE 'UTC')::date`,
			profile, requestID, amount.String()); err != nil {
			return fmt.Errorf("refund key spend: %w", err)
		}
		back = amount
		return nil
	})
	return back, err
}
