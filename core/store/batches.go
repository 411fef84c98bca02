package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// ProfileBatches is a profile's batches over a range, newest first, and the counts of every
// batch of the range added up (the admin API's ListProfileBatches).
type ProfileBatches struct {
	Batches []*Batch
	Totals  BatchTotals
}

// BatchTotals adds up batches' item counts; Running counts the batches not ended.
type BatchTotals struct {
	Batches, Running                            int64
	Total, Completed, Failed, Canceled, Expired int64
}

// ListProfileBatches lists up to limit of the profile's batches (both APIs; not the ones
// deleted through Anthropic's API) created at or after since (zero: all), of one key when
// keyID is not uuid.Nil.
func (s *Store) ListProfileBatches(ctx context.Context, profileID uuid.UUID, keyID uuid.UUID, since time.Time, limit int) (*ProfileBatches, error) {
	const where = `WHERE profile_id = $1 AND deleted_at IS NULL AND ($2 = '00000000-0000-0000-0000-000000000000'::uuid OR key_id = $2) AND created_at >= $3`
	out := &ProfileBatches{}
	t := &out.Totals
	err := s.Pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status IN ('in_progress', 'cancelling')),
			coalesce(sum(total), 0), coalesce(sum(completed), 0), coalesce(sum(failed), 0), coalesce(sum(canceled), 0), coalesce(sum(expired), 0)
		FROM batches `+where, profileID, keyID, since).Scan(&t.Batches, &t.Running, &t.Total, &t.Completed, &t.Failed, &t.Canceled, &t.Expired)
	if err != nil {
		return nil, fmt.Errorf("add up batches: %w", interpretError(err))
	}
	rows, err := s.Pool.Query(ctx, `SELECT `+batchColumns+` FROM batches `+where+` ORDER BY created_at DESC, id DESC LIMIT $4`,
		profileID, keyID, since, limit)
	if err != nil {
		return nil, fmt.Errorf("list batches: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			return nil, fmt.Errorf("scan batch: %w", err)
		}
		out.Batches = append(out.Batches, b)
	}
	return out, rows.Err()
}
