package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Batches (contract.md "Files and batches"): a batch row, its items, and the moves of both.
// Item outcomes: a response (any upstream status) goes to the output file; an error (the
// gateway refused the item), canceled and expired go to the error file.

// Item outcomes.
const (
	OutcomeResponse = "response"
	OutcomeError    = "error"
	OutcomeCanceled = "canceled"
	OutcomeExpired  = "expired"
)

// Batch statuses (OpenAI's; the Anthropic shape is made from them).
const (
	BatchInProgress = "in_progress"
	BatchFailed     = "failed"
	BatchCompleted  = "completed"
	BatchExpired    = "expired"
	BatchCancelling = "cancelling"
	BatchCancelled  = "cancelled"
)

// ErrBatchNotEnded: the batch is still processing (Anthropic's delete needs it ended).
var ErrBatchNotEnded = errors.New("the batch has not ended")

// Batch is one row of batches.
type Batch struct {
	ID, API, Endpoint, InputFileID, CompletionWindow, Status string
	ProfileID, KeyID                                         uuid.UUID
	Metadata, Errors                                         json.RawMessage
	Total, Completed, Failed, Canceled, Expired              int
	OutputFileID, ErrorFileID                                string
	CreatedAt, ExpiresAt                                     time.Time
	InProgressAt, FinalizingAt, CompletedAt, FailedAt        *time.Time
	ExpiredAt, CancellingAt, CancelledAt                     *time.Time
}

// Ended reports whether every item of the batch has its result.
func (b *Batch) Ended() bool {
	switch b.Status {
	case BatchFailed, BatchCompleted, BatchExpired, BatchCancelled:
		return true
	}
	return false
}

// BatchItem is one item to insert: its line's custom_id, model and request body.
type BatchItem struct {
	CustomID, Model string
	Body            []byte
}

const batchColumns = `id, api, endpoint, coalesce(input_file_id, ''), completion_window, status, profile_id, key_id,
	metadata, errors, total, completed, failed, canceled, expired, coalesce(output_file_id, ''), coalesce(error_file_id, ''),
	created_at, expires_at, in_progress_at, finalizing_at, completed_at, failed_at, expired_at, cancelling_at, cancelled_at`

func scanBatch(row pgx.Row) (*Batch, error) {
	var b Batch
	err := row.Scan(&b.ID, &b.API, &b.Endpoint, &b.InputFileID, &b.CompletionWindow, &b.Status, &b.ProfileID, &b.KeyID,
		&b.Metadata, &b.Errors, &b.Total, &b.Completed, &b.Failed, &b.Canceled, &b.Expired, &b.OutputFileID, &b.ErrorFileID,
		&b.CreatedAt, &b.ExpiresAt, &b.InProgressAt, &b.FinalizingAt, &b.CompletedAt, &b.FailedAt, &b.ExpiredAt, &b.CancellingAt, &b.CancelledAt)
	return &b, err
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// CreateBatch inserts a batch in progress and its items, read from next until it returns
// false, in one transaction: next's error (a bad line) leaves nothing behind, so a batch is
// never half made. The items stream to the database (COPY) as next yields them.
func (s *Store) CreateBatch(ctx context.Context, b *Batch, next func() (*BatchItem, bool, error)) (*Batch, error) {
	var out *Batch
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO batches (id, profile_id, key_id, api, endpoint, input_file_id, completion_window, status, metadata, expires_at, in_progress_at)
			VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, 'in_progress', $8, $9, now())`,
			b.ID, b.ProfileID, b.KeyID, b.API, b.Endpoint, b.InputFileID, b.CompletionWindow, nullJSON(b.Metadata), b.ExpiresAt); err != nil {
			return fmt.Errorf("insert batch %s: %w", b.ID, interpretError(err))
		}
		src := &itemSource{next: next}
		n, err := tx.CopyFrom(ctx, pgx.Identifier{"batch_items"}, []string{"batch_id", "idx", "custom_id", "model", "body"},
			src.with(b.ID))
		if err != nil {
			if src.err != nil {
				return src.err
			}
			return fmt.Errorf("insert items of batch %s: %w", b.ID, interpretError(err))
		}
		row := tx.QueryRow(ctx, `UPDATE batches SET total = $2 WHERE id = $1 RETURNING `+batchColumns, b.ID, n)
		out, err = scanBatch(row)
		if err != nil {
			return fmt.Errorf("count items of batch %s: %w", b.ID, interpretError(err))
		}
		return nil
	})
	return out, err
}

type itemSource struct {
	next    func() (*BatchItem, bool, error)
	batchID string
	idx     int
	cur     *BatchItem
	err     error
}

func (s *itemSource) with(id string) *itemSource { s.batchID = id; return s }

func (s *itemSource) Next() bool {
	it, ok, err := s.next()
	if err != nil {
		s.err = err
		return false
	}
	if !ok {
		return false
	}
	s.cur = it
	s.idx++
	return true
}

func (s *itemSource) Values() ([]any, error) {
	return []any{s.batchID, s.idx - 1, s.cur.CustomID, s.cur.Model, s.cur.Body}, nil
}

func (s *itemSource) Err() error { return s.err }

// InsertFailedBatch keeps a batch whose input failed validation, with its errors and no item.
func (s *Store) InsertFailedBatch(ctx context.Context, b *Batch) (*Batch, error) {
	row := s.Pool.QueryRow(ctx, `
		INSERT INTO batches (id, profile_id, key_id, api, endpoint, input_file_id, completion_window, status, metadata, errors, expires_at, failed_at)
		VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7, 'failed', $8, $9, $10, now()) RETURNING `+batchColumns,
		b.ID, b.ProfileID, b.KeyID, b.API, b.Endpoint, b.InputFileID, b.CompletionWindow, nullJSON(b.Metadata), nullJSON(b.Errors), b.ExpiresAt)
	out, err := scanBatch(row)
	if err != nil {
		return nil, fmt.Errorf("insert failed batch %s: %w", b.ID, interpretError(err))
	}
	return out, nil
}

// GetBatch is a batch of the profile made through api; ErrNotFound otherwise.
func (s *Store) GetBatch(ctx context.Context, profileID uuid.UUID, api, id string) (*Batch, error) {
	b, err := scanBatch(s.Pool.QueryRow(ctx, `SELECT `+batchColumns+` FROM batches WHERE id = $1 AND profile_id = $2 AND api = $3 AND deleted_at IS NULL`,
		id, profileID, api))
	if err != nil {
		return nil, fmt.Errorf("get batch %s: %w", id, interpretError(err))
	}
	return b, nil
}

// ListBatches is a page of the profile's batches of api, newest first: after the batch named
// after, or (before set) the newest ones before the batch named before.
func (s *Store) ListBatches(ctx context.Context, profileID uuid.UUID, api, after, before string, limit int) ([]*Batch, error) {
	q := `SELECT ` + batchColumns + ` FROM batches b0 WHERE profile_id = $1 AND api = $2 AND deleted_at IS NULL
		AND ($3 = '' OR (created_at, id) < (SELECT created_at, id FROM batches WHERE id = $3 AND profile_id = $1))
		ORDER BY created_at DESC, id DESC LIMIT $4`
	args := []any{profileID, api, after, limit}
	if before != "" {
		q = `SELECT * FROM (SELECT ` + batchColumns + ` FROM batches WHERE profile_id = $1 AND api = $2 AND deleted_at IS NULL
			AND (created_at, id) > (SELECT created_at, id FROM batches WHERE id = $3 AND profile_id = $1)
			ORDER BY created_at ASC, id ASC LIMIT $4) p ORDER BY created_at DESC, id DESC`
		args = []any{profileID, api, before, limit}
	}
	rows, err := s.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*Batch
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			return nil, fmt.Errorf("scan batch: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// CancelBatch stops a batch in progress: its unstarted items end canceled (never charged), and
// it is cancelling until the items running now end, cancelled then. A batch that has ended
// is returned as it is.
func (s *Store) CancelBatch(ctx context.Context, profileID uuid.UUID, api, id string) (*Batch, error) {
	var out *Batch
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		b, err := scanBatch(tx.QueryRow(ctx, `SELECT `+batchColumns+` FROM batches WHERE id = $1 AND profile_id = $2 AND api = $3 AND deleted_at IS NULL FOR UPDATE`,
			id, profileID, api))
		if err != nil {
			return fmt.Errorf("get batch %s: %w", id, interpretError(err))
		}
		if b.Status != BatchInProgress {
			out = b
			return nil
		}
		tag, err := tx.Exec(ctx, `UPDATE batch_items SET state = 'done', outcome = 'canceled', finished_at = now()
			WHERE batch_id = $1 AND state = 'pending'`, id)
		if err != nil {
			return fmt.Errorf("cancel items of batch %s: %w", id, interpretError(err))
		}
		if _, err := tx.Exec(ctx, `UPDATE batches SET status = 'cancelling', cancelling_at = now(), canceled = canceled + $2 WHERE id = $1`,
			id, tag.RowsAffected()); err != nil {
			return fmt.Errorf("cancel batch %s: %w", id, interpretError(err))
		}
		if err := finalize(ctx, tx, id); err != nil {
			return err
		}
		out, err = scanBatch(tx.QueryRow(ctx, `SELECT `+batchColumns+` FROM batches WHERE id = $1`, id))
		return err
	})
	return out, err
}

// DeleteBatch removes an ended batch of the profile from view (Anthropic's delete).
func (s *Store) DeleteBatch(ctx context.Context, profileID uuid.UUID, api, id string) error {
	b, err := s.GetBatch(ctx, profileID, api, id)
	if err != nil {
		return err
	}
	if !b.Ended() {
		return ErrBatchNotEnded
	}
	if _, err := s.Pool.Exec(ctx, `UPDATE batches SET deleted_at = now() WHERE id = $1`, id); err != nil {
		return fmt.Errorf("delete batch %s: %w", id, interpretError(err))
	}
	return nil
}

// finalize ends a batch none of whose items is left: completed (or cancelled, when it was
// being cancelled), with its output file when some item has a response and its error file
// when some has not. Call it with the batch's row locked.
func finalize(ctx context.Context, tx pgx.Tx, id string) error {
	var status string
	var open bool
	var profileID uuid.UUID
	var nResp, nOther int
	var expired bool
	err := tx.QueryRow(ctx, `SELECT b.status, b.profile_id,
			EXISTS (SELECT 1 FROM batch_items WHERE batch_id = b.id AND state <> 'done'),
			b.completed, b.failed + b.canceled + b.expired, b.expired > 0
		FROM batches b WHERE b.id = $1`, id).Scan(&status, &profileID, &open, &nResp, &nOther, &expired)
	if err != nil {
		return fmt.Errorf("read batch %s: %w", id, interpretError(err))
	}
	if open || (status != BatchInProgress && status != BatchCancelling) {
		return nil
	}
	final, at := BatchCompleted, "completed_at"
	switch {
	case status == BatchCancelling:
		final, at = BatchCancelled, "cancelled_at"
	case expired:
		final, at = BatchExpired, "expired_at"
	}
	return endBatch(ctx, tx, id, profileID, final, at, nResp, nOther)
}

// endBatch sets a batch's final status and makes its result files.
func endBatch(ctx context.Context, tx pgx.Tx, id string, profileID uuid.UUID, final, at string, nResp, nOther int) error {
	var outID, errID *string
	mk := func(kind string) (*string, error) {
		fid := NewFileID()
		_, err := tx.Exec(ctx, `INSERT INTO batch_files (id, profile_id, filename, purpose, batch_id, result_kind, expires_at)
			VALUES ($1, $2, $3, 'batch_output', $4, $5, now() + interval '30 days')`, fid, profileID, id+"_"+kind+".jsonl", id, kind)
		if err != nil {
			return nil, fmt.Errorf("make %s file of batch %s: %w", kind, id, interpretError(err))
		}
		return &fid, nil
	}
	var err error
	if nResp > 0 {
		if outID, err = mk("output"); err != nil {
			return err
		}
	}
	if nOther > 0 {
		if errID, err = mk("error"); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `UPDATE batches SET status = $2, `+at+` = now(), finalizing_at = coalesce(finalizing_at, now()),
		output_file_id = $3, error_file_id = $4 WHERE id = $1`, id, final, outID, errID)
	if err != nil {
		return fmt.Errorf("end batch %s: %w", id, interpretError(err))
	}
	return nil
}

// NewFileID makes a file id: "file-" and 24 random base-32 characters.
func NewFileID() string { return NewObjectID("file-") }

// ResultItem is a finished item as its result line needs it.
type ResultItem struct {
	Idx                  int
	CustomID, Outcome    string
	StatusCode           int
	RequestID            string
	Response             []byte
	ErrorCode, ErrorText string
}

// BatchResults calls fn for each finished item of the batch in input order, a page at a
// time; kind "output" is the items with a response, "error" the others, "" all of them.
func (s *Store) BatchResults(ctx context.Context, batchID, kind string, fn func(*ResultItem) error) error {
	last := -1
	for {
		rows, err := s.Pool.Query(ctx, `
			SELECT idx, custom_id, outcome, coalesce(status_code, 0), coalesce(request_id, ''), response,
			       coalesce(error_code, ''), coalesce(error_msg, '')
			FROM batch_items WHERE batch_id = $1 AND idx > $2 AND state = 'done'
			AND ($3 = '' OR (outcome = 'response') = ($3 = 'output'))
			ORDER BY idx LIMIT 256`, batchID, last, kind)
		if err != nil {
			return fmt.Errorf("read results of batch %s: %w", batchID, interpretError(err))
		}
		var page []*ResultItem
		for rows.Next() {
			var it ResultItem
			if err := rows.Scan(&it.Idx, &it.CustomID, &it.Outcome, &it.StatusCode, &it.RequestID, &it.Response, &it.ErrorCode, &it.ErrorText); err != nil {
				rows.Close()
				return fmt.Errorf("scan result: %w", err)
			}
			page = append(page, &it)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read results of batch %s: %w", batchID, interpretError(err))
		}
		for _, it := range page {
			if err := fn(it); err != nil {
				return err
			}
			last = it.Idx
		}
		if len(page) < 256 {
			return nil
		}
	}
}

// CountNon2xx counts the batch's items whose upstream answer was not a success.
func (s *Store) CountNon2xx(ctx context.Context, batchID string) (int, error) {
	var n int
	err := s.Pool.QueryRow(ctx, `SELECT count(*) FROM batch_items WHERE batch_id = $1 AND outcome = 'response' AND status_code NOT BETWEEN 200 AND 299`, batchID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count items of batch %s: %w", batchID, interpretError(err))
	}
	return n, nil
}

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
	rows, err := s.Pool.Query(ctx, `
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
	return s.inTx(ctx, func(tx pgx.Tx) error {
		// The batch rows first, in one order: every finish, cancel and expiry of a batch
		// locks it before its items.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM batches WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
			return fmt.Errorf("lock batches: %w", interpretError(err))
		}
		for _, d := range done {
			it, res := d.Item, d.Result
			tag, err := tx.Exec(ctx, `UPDATE batch_items SET state = 'done', outcome = $4, status_code = nullif($5, 0), response = $6,
					error_code = nullif($7, ''), error_msg = nullif($8, ''), finished_at = now()
				WHERE batch_id = $1 AND idx = $2 AND request_id = $3 AND state = 'running'`,
				it.BatchID, it.Idx, it.RequestID, res.Outcome, res.StatusCode, res.Response, res.ErrorCode, res.ErrorText)
			if err != nil {
				return fmt.Errorf("finish item %d of batch %s: %w", it.Idx, it.BatchID, interpretError(err))
			}
			if tag.RowsAffected() == 1 {
				batches[it.BatchID][res.Outcome]++
			}
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
	})
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
