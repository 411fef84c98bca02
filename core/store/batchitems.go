package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The moves of batch items: claimed by a replica, renewed while it runs them, finished with
// their results, put back, or ended by their batch's window.

// ClaimedItem is an item a replica has taken to run.
type ClaimedItem struct {
	BatchID   string
	Idx       int
	CustomID  string
	Body      []byte
	Attempts  int
	RequestID string
	// PreviousRequestID is the request id of an earlier attempt whose replica died; empty on
	// the first attempt.
	PreviousRequestID string
	ProfileID, KeyID  uuid.UUID
	API, Endpoint     string
	// Stopped is the outcome of an item taken over from a dead replica whose batch may run
	// nothing more (OutcomeCanceled, OutcomeExpired); empty when it may run.
	Stopped string
}

// ClaimBatchItems takes up to n items to run: unstarted items of batches in progress within
// their window, oldest batch first, and items whose claim is older than lease (their replica
// stopped renewing it: it died). FOR UPDATE SKIP LOCKED: replicas claiming at once never
// take one item twice, and never wait for each other. Each attempt gets a request id of its
// own ("gw-" batch "-" index "-" attempt), so a new attempt never meets the record of an
// old one.
func (s *Store) ClaimBatchItems(ctx context.Context, n int, lease time.Duration) ([]*ClaimedItem, error) {
	return claimItems(ctx, s.Pool, n, lease)
}

// querier is what the item moves need of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func claimItems(ctx context.Context, q querier, n int, lease time.Duration) ([]*ClaimedItem, error) {
	rows, err := q.Query(ctx, `
		WITH c AS (
			SELECT bi.batch_id, bi.idx, bi.request_id AS previous FROM batch_items bi JOIN batches b ON b.id = bi.batch_id
			WHERE (bi.state = 'pending' AND b.status = 'in_progress' AND b.expires_at > now())
			   OR (bi.state = 'running' AND bi.claimed_at < now() - $2 * interval '1 millisecond' AND b.status IN ('in_progress', 'cancelling'))
			ORDER BY b.created_at, bi.batch_id, bi.idx LIMIT $1
			FOR UPDATE OF bi SKIP LOCKED),
		u AS (
			UPDATE batch_items i SET state = 'running', claimed_at = now(), attempts = i.attempts + 1,
				request_id = 'gw-' || i.batch_id || '-' || i.idx || '-' || (i.attempts + 1)
			FROM c WHERE i.batch_id = c.batch_id AND i.idx = c.idx
			RETURNING i.batch_id, i.idx, i.custom_id, i.body, i.attempts, i.request_id, coalesce(c.previous, '') AS previous)
		SELECT u.batch_id, u.idx, u.custom_id, u.body, u.attempts, u.request_id, u.previous, b.profile_id, b.key_id, b.api, b.endpoint,
			CASE WHEN b.status = 'cancelling' THEN 'canceled' WHEN b.expires_at <= now() THEN 'expired' ELSE '' END
		FROM u JOIN batches b ON b.id = u.batch_id`, n, lease.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("claim batch items: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*ClaimedItem
	for rows.Next() {
		var it ClaimedItem
		if err := rows.Scan(&it.BatchID, &it.Idx, &it.CustomID, &it.Body, &it.Attempts, &it.RequestID, &it.PreviousRequestID,
			&it.ProfileID, &it.KeyID, &it.API, &it.Endpoint, &it.Stopped); err != nil {
			return nil, fmt.Errorf("scan claimed item: %w", err)
		}
		out = append(out, &it)
	}
	return out, rows.Err()
}

// RenewBatchItems keeps the claims of items this replica is running.
func (s *Store) RenewBatchItems(ctx context.Context, requestIDs []string) error {
	if len(requestIDs) == 0 {
		return nil
	}
	_, err := s.Pool.Exec(ctx, `UPDATE batch_items SET claimed_at = now() WHERE state = 'running' AND request_id = ANY($1)`, requestIDs)
	if err != nil {
		return fmt.Errorf("renew batch items: %w", interpretError(err))
	}
	return nil
}

// RequestCharged reports whether a request of the profile has a settled record: its charge
// (if any) has committed, and running it again would charge it twice.
func (s *Store) RequestCharged(ctx context.Context, profileID uuid.UUID, requestID string) (bool, error) {
	var ok bool
	err := s.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM requests WHERE profile_id = $1 AND request_id = $2
		AND status NOT IN ('in_progress', 'abandoned'))`, profileID, requestID).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("read request %s: %w", requestID, interpretError(err))
	}
	return ok, nil
}

// ItemResult is how an item ended.
type ItemResult struct {
	Outcome              string
	StatusCode           int
	Response             []byte
	ErrorCode, ErrorText string
}

// FinishedItem is one attempt's result to record.
type FinishedItem struct {
	Item   *ClaimedItem
	Result *ItemResult
}

// FinishBatchItem records one item's result (FinishBatchItems of one).
func (s *Store) FinishBatchItem(ctx context.Context, it *ClaimedItem, res *ItemResult) error {
	return s.FinishBatchItems(ctx, []FinishedItem{{it, res}})
}

// FinishBatchItems records items' results, counts them and ends each batch whose last item
// it was, in one transaction: a replica finishing many items at once writes them together.
// An attempt's request id must still be its item's: an attempt whose claim was taken over
// (its replica seemed dead) records nothing.
func (s *Store) FinishBatchItems(ctx context.Context, done []FinishedItem) error {
	return s.inTx(ctx, func(tx pgx.Tx) error { return finishItems(ctx, tx, done) })
}

// BatchRound is a runner's transaction (core/batchrun): it records the results waiting, then
// claims up to claim items (ClaimBatchItems), and says which of the watched batches may run
// nothing more (cancelled: OutcomeCanceled; past their window: OutcomeExpired), so that the
// items a runner holds unstarted for them end as their unstarted siblings did. One
// transaction for all three is what keeps a batch's database work per item small.
func (s *Store) BatchRound(ctx context.Context, done []FinishedItem, claim int, lease time.Duration, watch []string) (claimed []*ClaimedItem, stopped map[string]string, err error) {
	if len(done) == 0 && len(watch) == 0 {
		// A claim alone (an idle runner's look for work) is one statement, atomic by itself:
		// no transaction around it (begin and commit were two of its three statements).
		if claim <= 0 {
			return nil, map[string]string{}, nil
		}
		claimed, err = claimItems(ctx, s.Pool, claim, lease)
		if err != nil {
			return nil, nil, err
		}
		return claimed, map[string]string{}, nil
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		claimed, stopped = nil, map[string]string{}
		if err := finishItems(ctx, tx, done); err != nil {
			return err
		}
		if len(watch) > 0 {
			rows, err := tx.Query(ctx, `SELECT id, CASE WHEN status IN ('cancelling', 'cancelled') THEN 'canceled' ELSE 'expired' END
				FROM batches WHERE id = ANY($1) AND (status <> 'in_progress' OR expires_at <= now())`, watch)
			if err != nil {
				return fmt.Errorf("read batches' status: %w", interpretError(err))
			}
			for rows.Next() {
				var id, outcome string
				if err := rows.Scan(&id, &outcome); err != nil {
					rows.Close()
					return fmt.Errorf("scan batch status: %w", err)
				}
				stopped[id] = outcome
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read batches' status: %w", interpretError(err))
			}
		}
		if claim > 0 {
			var err error
			if claimed, err = claimItems(ctx, tx, claim, lease); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return claimed, stopped, nil
}

func finishItems(ctx context.Context, tx pgx.Tx, done []FinishedItem) error {
	if len(done) == 0 {
		return nil
	}
	batches := map[string]map[string]int{}
	for _, d := range done {
		if batches[d.Item.BatchID] == nil {
			batches[d.Item.BatchID] = map[string]int{}
		}
	}
	ids := make([]string, 0, len(batches))
	for id := range batches {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	// The batch rows first, in one order: every finish, cancel and expiry of a batch locks
	// it before its items.
	if _, err := tx.Exec(ctx, `SELECT 1 FROM batches WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
		return fmt.Errorf("lock batches: %w", interpretError(err))
	}
	// The results in one statement: each row whose attempt still holds its item is done.
	n := len(done)
	bids, idxs, rids, outcomes, codes, resps, ecodes, emsgs := make([]string, n), make([]int32, n), make([]string, n), make([]string, n),
		make([]int32, n), make([][]byte, n), make([]string, n), make([]string, n)
	for i, d := range done {
		bids[i], idxs[i], rids[i] = d.Item.BatchID, int32(d.Item.Idx), d.Item.RequestID
		outcomes[i], codes[i], resps[i], ecodes[i], emsgs[i] = d.Result.Outcome, int32(d.Result.StatusCode), d.Result.Response, d.Result.ErrorCode, d.Result.ErrorText
	}
	rows, err := tx.Query(ctx, `UPDATE batch_items i SET state = 'done', outcome = t.outcome, status_code = nullif(t.code, 0), response = t.resp,
			error_code = nullif(t.ecode, ''), error_msg = nullif(t.emsg, ''), finished_at = now()
		FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::int[], $6::bytea[], $7::text[], $8::text[]) AS t(bid, idx, rid, outcome, code, resp, ecode, emsg)
		WHERE i.batch_id = t.bid AND i.idx = t.idx AND i.request_id = t.rid AND i.state = 'running'
		RETURNING i.batch_id, i.outcome`, bids, idxs, rids, outcomes, codes, resps, ecodes, emsgs)
	if err != nil {
		return fmt.Errorf("finish batch items: %w", interpretError(err))
	}
	for rows.Next() {
		var id, outcome string
		if err := rows.Scan(&id, &outcome); err != nil {
			rows.Close()
			return fmt.Errorf("scan finished item: %w", err)
		}
		batches[id][outcome]++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("finish batch items: %w", interpretError(err))
	}
	for _, id := range ids {
		c := batches[id]
		if len(c) == 0 {
			continue
		}
		if _, err := tx.Exec(ctx, `UPDATE batches SET completed = completed + $2, failed = failed + $3, canceled = canceled + $4, expired = expired + $5 WHERE id = $1`,
			id, c[OutcomeResponse], c[OutcomeError], c[OutcomeCanceled], c[OutcomeExpired]); err != nil {
			return fmt.Errorf("count items of batch %s: %w", id, interpretError(err))
		}
		if err := finalize(ctx, tx, id); err != nil {
			return err
		}
	}
	return nil
}

// ReleaseBatchItems puts claimed items back, unstarted (a replica stopping with items it had
// not started yet).
func (s *Store) ReleaseBatchItems(ctx context.Context, requestIDs []string) error {
	if len(requestIDs) == 0 {
		return nil
	}
	_, err := s.Pool.Exec(ctx, `UPDATE batch_items SET state = 'pending', claimed_at = NULL WHERE state = 'running' AND request_id = ANY($1)`, requestIDs)
	if err != nil {
		return fmt.Errorf("release batch items: %w", interpretError(err))
	}
	return nil
}

// ReleaseBatchItem puts a claimed item back, unstarted (a refusal to retry later).
func (s *Store) ReleaseBatchItem(ctx context.Context, it *ClaimedItem) error {
	_, err := s.Pool.Exec(ctx, `UPDATE batch_items SET state = 'pending', claimed_at = NULL WHERE batch_id = $1 AND idx = $2 AND request_id = $3 AND state = 'running'`,
		it.BatchID, it.Idx, it.RequestID)
	if err != nil {
		return fmt.Errorf("release item %d of batch %s: %w", it.Idx, it.BatchID, interpretError(err))
	}
	return nil
}

// ExpireBatches ends the window of batches past it: their unstarted items end expired
// (never charged) and a batch with no item running ends expired (or cancelled, when it was
// being cancelled); one with items running ends when the last of them does. It returns how
// many batches it touched.
func (s *Store) ExpireBatches(ctx context.Context) (int, error) {
	rows, err := s.Pool.Query(ctx, `SELECT id FROM batches WHERE status IN ('in_progress', 'cancelling') AND expires_at <= now() LIMIT 100`)
	if err != nil {
		return 0, fmt.Errorf("find expired batches: %w", interpretError(err))
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	for _, id := range ids {
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM batches WHERE id = $1 FOR UPDATE`, id); err != nil {
				return fmt.Errorf("lock batch %s: %w", id, interpretError(err))
			}
			tag, err := tx.Exec(ctx, `UPDATE batch_items SET state = 'done', outcome = 'expired', finished_at = now()
				WHERE batch_id = $1 AND state = 'pending'`, id)
			if err != nil {
				return fmt.Errorf("expire items of batch %s: %w", id, interpretError(err))
			}
			// At least one expired item marks the batch as ended by its window (finalize).
			if _, err := tx.Exec(ctx, `UPDATE batches SET expired = expired + $2 WHERE id = $1`, id, tag.RowsAffected()); err != nil {
				return fmt.Errorf("count expired items of batch %s: %w", id, interpretError(err))
			}
			return finalize(ctx, tx, id)
		})
		if err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// BatchQueueDepth is the number of items not yet finished across every batch.
func (s *Store) BatchQueueDepth(ctx context.Context) (int64, error) {
	var n int64
	err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM batch_items WHERE state <> 'done'`).Scan(&n)
	return n, err
}
