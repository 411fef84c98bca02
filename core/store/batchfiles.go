package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Files of the Files API (contract.md "Files and batches"): uploaded bytes in chunks of at
// most FileChunkBytes, and a batch's output and error files, read from its finished items.

// FileChunkBytes is the most one stored chunk holds: an upload and a download hold one chunk
// at a time, never a whole file.
const FileChunkBytes = 1 << 20

// ErrFileQuota: the upload would take the profile's files past its quota.
var ErrFileQuota = errors.New("the profile's file storage quota is used up")

// BatchFile is one row of batch_files.
type BatchFile struct {
	ID         string
	ProfileID  uuid.UUID
	Filename   string
	Purpose    string
	Bytes      int64
	BatchID    string // result files: their batch
	ResultKind string // "output" or "error" for result files
	CreatedAt  time.Time
	ExpiresAt  *time.Time
}

// FileUpload is one upload in progress: a transaction that holds the file's row and the chunks
// written so far. Nothing of it is visible until Finish commits; Abort (or a failed Finish)
// leaves nothing behind.
type FileUpload struct {
	tx   pgx.Tx
	file BatchFile
	buf  []byte
	seq  int
}

// BeginFileUpload starts storing a file of the profile.
func (s *Store) BeginFileUpload(ctx context.Context, id string, profileID uuid.UUID, filename string) (*FileUpload, error) {
	tx, err := s.Pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin file upload: %w", err)
	}
	u := &FileUpload{tx: tx, file: BatchFile{ID: id, ProfileID: profileID, Filename: filename}}
	if _, err := tx.Exec(ctx, `INSERT INTO batch_files (id, profile_id, filename, purpose) VALUES ($1, $2, $3, '')`,
		id, profileID, filename); err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("insert file %s: %w", id, interpretError(err))
	}
	return u, nil
}

// Write appends bytes, writing a chunk each time FileChunkBytes have gathered.
func (u *FileUpload) Write(ctx context.Context, p []byte) error {
	u.file.Bytes += int64(len(p))
	for len(p) > 0 {
		n := min(len(p), FileChunkBytes-len(u.buf))
		u.buf = append(u.buf, p[:n]...)
		p = p[n:]
		if len(u.buf) == FileChunkBytes {
			if err := u.flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// Bytes is how many bytes have been written.
func (u *FileUpload) Bytes() int64 { return u.file.Bytes }

func (u *FileUpload) flush(ctx context.Context) error {
	if len(u.buf) == 0 {
		return nil
	}
	if _, err := u.tx.Exec(ctx, `INSERT INTO batch_file_chunks (file_id, seq, data) VALUES ($1, $2, $3)`,
		u.file.ID, u.seq, u.buf); err != nil {
		return fmt.Errorf("write chunk %d of file %s: %w", u.seq, u.file.ID, interpretError(err))
	}
	u.seq++
	u.buf = u.buf[:0]
	return nil
}

// Finish writes the last chunk and the file's purpose, size and expiry, and commits unless the
// profile's live files would then hold more than quota bytes (ErrFileQuota).
func (u *FileUpload) Finish(ctx context.Context, purpose string, expiresAt *time.Time, quota int64) (*BatchFile, error) {
	defer func() { _ = u.tx.Rollback(ctx) }()
	if err := u.flush(ctx); err != nil {
		return nil, err
	}
	// One upload of a profile at a time passes this point, so two uploads cannot both fit
	// what only one of them fits.
	if _, err := u.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('batch_files:' || $1::text, 0))`, u.file.ProfileID); err != nil {
		return nil, fmt.Errorf("lock file quota: %w", interpretError(err))
	}
	var used int64
	if err := u.tx.QueryRow(ctx, `
		SELECT coalesce(sum(bytes), 0) FROM batch_files
		WHERE profile_id = $1 AND deleted_at IS NULL AND id <> $2 AND (expires_at IS NULL OR expires_at > now())`,
		u.file.ProfileID, u.file.ID).Scan(&used); err != nil {
		return nil, fmt.Errorf("read file quota: %w", interpretError(err))
	}
	if quota > 0 && used+u.file.Bytes > quota {
		return nil, ErrFileQuota
	}
	f := u.file
	f.Purpose, f.ExpiresAt = purpose, expiresAt
	if err := u.tx.QueryRow(ctx, `UPDATE batch_files SET purpose = $2, bytes = $3, expires_at = $4 WHERE id = $1 RETURNING created_at`,
		f.ID, purpose, f.Bytes, expiresAt).Scan(&f.CreatedAt); err != nil {
		return nil, fmt.Errorf("finish file %s: %w", f.ID, interpretError(err))
	}
	if err := u.tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit file %s: %w", f.ID, interpretError(err))
	}
	return &f, nil
}

// Abort drops the upload.
func (u *FileUpload) Abort(ctx context.Context) { _ = u.tx.Rollback(ctx) }

const fileColumns = `f.id, f.profile_id, f.filename, f.purpose,
	CASE WHEN f.batch_id IS NULL THEN f.bytes ELSE coalesce((
		SELECT sum(octet_length(i.response) + 1) FROM batch_items i
		WHERE i.batch_id = f.batch_id AND i.state = 'done' AND (i.outcome = 'response') = (f.result_kind = 'output')), 0) END,
	coalesce(f.batch_id, ''), coalesce(f.result_kind, ''), f.created_at, f.expires_at`

const liveFile = `f.deleted_at IS NULL AND (f.expires_at IS NULL OR f.expires_at > now())`

func scanFile(row pgx.Row) (*BatchFile, error) {
	var f BatchFile
	err := row.Scan(&f.ID, &f.ProfileID, &f.Filename, &f.Purpose, &f.Bytes, &f.BatchID, &f.ResultKind, &f.CreatedAt, &f.ExpiresAt)
	return &f, err
}

// GetBatchFile is a live file of the profile; ErrNotFound otherwise. A result file's size is
// an estimate until its batch ends (the lines are rendered when read).
func (s *Store) GetBatchFile(ctx context.Context, profileID uuid.UUID, id string) (*BatchFile, error) {
	f, err := scanFile(s.Pool.QueryRow(ctx, `SELECT `+fileColumns+` FROM batch_files f WHERE f.id = $1 AND f.profile_id = $2 AND `+liveFile, id, profileID))
	if err != nil {
		return nil, fmt.Errorf("get file %s: %w", id, interpretError(err))
	}
	return f, nil
}

// ListBatchFiles is a page of the profile's live files by created_at (then id), after the
// file named after (empty: from the start); purpose filters when not empty.
func (s *Store) ListBatchFiles(ctx context.Context, profileID uuid.UUID, after string, limit int, desc bool, purpose string) ([]*BatchFile, error) {
	cmp, order := ">", "ASC"
	if desc {
		cmp, order = "<", "DESC"
	}
	q := `SELECT ` + fileColumns + ` FROM batch_files f
		WHERE f.profile_id = $1 AND ` + liveFile + ` AND ($2 = '' OR f.purpose = $2)
		AND ($3 = '' OR (f.created_at, f.id) ` + cmp + ` (SELECT created_at, id FROM batch_files WHERE id = $3 AND profile_id = $1))
		ORDER BY f.created_at ` + order + `, f.id ` + order + ` LIMIT $4`
	rows, err := s.Pool.Query(ctx, q, profileID, purpose, after, limit)
	if err != nil {
		return nil, fmt.Errorf("list files: %w", interpretError(err))
	}
	defer rows.Close()
	var out []*BatchFile
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("scan file: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// DeleteBatchFile marks a live file of the profile deleted and drops its bytes, which frees
// its share of the quota at once.
func (s *Store) DeleteBatchFile(ctx context.Context, profileID uuid.UUID, id string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE batch_files f SET deleted_at = now() WHERE f.id = $1 AND f.profile_id = $2 AND `+liveFile, id, profileID)
		if err != nil {
			return fmt.Errorf("delete file %s: %w", id, interpretError(err))
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		if _, err := tx.Exec(ctx, `DELETE FROM batch_file_chunks WHERE file_id = $1`, id); err != nil {
			return fmt.Errorf("delete chunks of file %s: %w", id, interpretError(err))
		}
		return nil
	})
}

// FileChunk reads chunk seq of an uploaded file; ok is false past its last chunk. One chunk
// per statement: a download never holds a connection while its client reads slowly.
func (s *Store) FileChunk(ctx context.Context, id string, seq int) (data []byte, ok bool, err error) {
	err = s.Pool.QueryRow(ctx, `SELECT data FROM batch_file_chunks WHERE file_id = $1 AND seq = $2`, id, seq).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read chunk %d of file %s: %w", seq, id, interpretError(err))
	}
	return data, true, nil
}

// PurgeBatchFiles removes up to limit files that are deleted or expired, with their chunks,
// and the items of up to limit batches that ended more than the files' 30 days ago (their
// results are gone with their files; the batch objects stay).
func (s *Store) PurgeBatchFiles(ctx context.Context, limit int) (int64, error) {
	tag, err := s.Pool.Exec(ctx, `
		DELETE FROM batch_files WHERE id IN (
			SELECT id FROM batch_files WHERE deleted_at IS NOT NULL OR expires_at <= now() LIMIT $1)`, limit)
	if err != nil {
		return 0, fmt.Errorf("purge files: %w", interpretError(err))
	}
	items, err := s.Pool.Exec(ctx, `
		DELETE FROM batch_items WHERE batch_id IN (
			SELECT id FROM batches WHERE coalesce(completed_at, cancelled_at, expired_at, failed_at) < now() - interval '30 days' LIMIT $1)`, limit)
	if err != nil {
		return 0, fmt.Errorf("purge batch items: %w", interpretError(err))
	}
	return tag.RowsAffected() + items.RowsAffected(), nil
}

// NewObjectID makes an id of the gateway's objects: prefix and 24 random base-32 characters.
func NewObjectID(prefix string) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var b [24]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[b[i]&31]
	}
	return prefix + string(b[:])
}
