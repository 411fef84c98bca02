package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ErrChainBroken: a stored response continues one that was deleted, or that is no longer
// there; continuing it would silently drop part of the conversation.
var ErrChainBroken = errors.New("an earlier response of the conversation was deleted")

// ErrChainTooLarge: the conversation's items add up to more than MaxChainBytes. Expanding it
// would hold that much in memory per request (and a chain grows with every turn), so the
// read stops there instead of loading the rest.
var ErrChainTooLarge = errors.New("the stored conversation is too large to continue")

// MaxChainBytes bounds the items a continued conversation brings into one request: the
// generation routes' body limit, so an expanded request is never more than twice one body.
const MaxChainBytes = 32 << 20

// StoredResponse is one row of stored_responses: the Response object once, and only this
// response's own input items (a JSON array, each item with an id).
type StoredResponse struct {
	ID         string
	ProfileID  uuid.UUID
	PreviousID string // empty: the first response of its conversation
	Response   []byte
	InputItems []byte
	ExpiresAt  time.Time
}

// PutStoredResponse keeps a response. Ids are the gateway's own and random; a second put of
// one id (a retried call) keeps the first.
func (s *Store) PutStoredResponse(ctx context.Context, r *StoredResponse) error {
	var prev *string
	if r.PreviousID != "" {
		prev = &r.PreviousID
	}
	_, err := s.Pool.Exec(ctx, `
		INSERT INTO stored_responses (id, profile_id, previous_id, response, input_items, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		r.ID, r.ProfileID, prev, string(r.Response), string(r.InputItems), r.ExpiresAt)
	if err != nil {
		return fmt.Errorf("put stored response %s: %w", r.ID, interpretError(err))
	}
	return nil
}

// ChainLink is one response of a conversation: its own input items and its output items.
type ChainLink struct {
	ID         string
	InputItems []byte
	Output     []byte
}

// maxChain bounds the recursion against a corrupted cycle; no client builds a conversation
// of this many turns within one TTL.
const maxChain = 100000

// StoredResponseChain reads the conversation that ends with id, oldest response first, in
// one query. ErrNotFound: id is unknown, expired, deleted or another profile's.
// ErrChainBroken: an earlier response was deleted or purged. An earlier response past its
// own expiry still counts: a row is kept while a later one names it, and a conversation
// lives as long as its newest response.
func (s *Store) StoredResponseChain(ctx context.Context, profileID uuid.UUID, id string) ([]ChainLink, error) {
	rows, err := s.Pool.Query(ctx, `
		WITH RECURSIVE chain AS (
			SELECT id, previous_id, input_items, response->'output' AS output,
			       deleted_at IS NULL AND expires_at > now() AS live, 0 AS depth,
			       octet_length(input_items::text) + coalesce(octet_length((response->'output')::text), 0)::bigint AS size
			FROM stored_responses WHERE id = $1 AND profile_id = $2
			UNION ALL
			SELECT r.id, r.previous_id, r.input_items, r.response->'output',
			       r.deleted_at IS NULL, c.depth + 1,
			       c.size + octet_length(r.input_items::text) + coalesce(octet_length((r.response->'output')::text), 0)
			FROM stored_responses r JOIN chain c ON r.id = c.previous_id
			WHERE r.profile_id = $2 AND c.depth < $3 AND c.size <= $4
		)
		SELECT id, previous_id, input_items::text, coalesce(output, '[]'::jsonb)::text, live, size
		FROM chain ORDER BY depth DESC`, id, profileID, maxChain, MaxChainBytes)
	if err != nil {
		return nil, fmt.Errorf("read stored response chain %s: %w", id, err)
	}
	defer rows.Close()
	var links []ChainLink
	var first *string // previous_id of the oldest row read
	var headLive bool
	ancestorsLive := true
	for rows.Next() {
		var l ChainLink
		var prev *string
		var live bool
		var size int64
		// Into fresh byte slices: pgx copies a text value into a []byte it is given, and
		// the slices outlive the row.
		if err := rows.Scan(&l.ID, &prev, &l.InputItems, &l.Output, &live, &size); err != nil {
			return nil, fmt.Errorf("read stored response chain %s: %w", id, err)
		}
		if len(links) == 0 {
			first = prev
			// The oldest row read carries the whole sum: past the cap, the recursion
			// stopped there and the rest of the conversation was never loaded.
			if size > MaxChainBytes {
				return nil, ErrChainTooLarge
			}
		}
		// Rows come oldest first: the one read last is the head, which alone must be
		// within its own expiry; the rows before it must only not be deleted.
		if len(links) > 0 {
			ancestorsLive = ancestorsLive && headLive
		}
		links = append(links, l)
		headLive = live
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored response chain %s: %w", id, err)
	}
	switch {
	case len(links) == 0 || !headLive:
		return nil, ErrNotFound
	case !ancestorsLive, first != nil:
		return nil, ErrChainBroken
	}
	return links, nil
}

// GetStoredResponse is a live response of the profile and its own input items.
func (s *Store) GetStoredResponse(ctx context.Context, profileID uuid.UUID, id string) (response, inputItems []byte, err error) {
	var resp, in string
	err = s.Pool.QueryRow(ctx, `
		SELECT response::text, input_items::text FROM stored_responses
		WHERE id = $1 AND profile_id = $2 AND deleted_at IS NULL AND expires_at > now()`,
		id, profileID).Scan(&resp, &in)
	if err != nil {
		return nil, nil, fmt.Errorf("get stored response %s: %w", id, interpretError(err))
	}
	return []byte(resp), []byte(in), nil
}

// DeleteStoredResponse marks a live response of the profile deleted; the purge removes it.
func (s *Store) DeleteStoredResponse(ctx context.Context, profileID uuid.UUID, id string) error {
	tag, err := s.Pool.Exec(ctx, `
		UPDATE stored_responses SET deleted_at = now()
		WHERE id = $1 AND profile_id = $2 AND deleted_at IS NULL AND expires_at > now()`, id, profileID)
	if err != nil {
		return fmt.Errorf("delete stored response %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("delete stored response %s: %w", id, ErrNotFound)
	}
	return nil
}

// PurgeStoredResponses removes up to batch rows that are deleted, or expired and continued
// by no other row, and says how many it removed. An expired row that a later one names
// stays: its conversation lives while its newest response does. Replicas purging at once
// skip each other's rows rather than wait for them.
func (s *Store) PurgeStoredResponses(ctx context.Context, batch int) (int64, error) {
	tag, err := s.Pool.Exec(ctx, `
		DELETE FROM stored_responses WHERE id IN (
			SELECT r.id FROM stored_responses r
			WHERE r.deleted_at IS NOT NULL
			   OR (r.expires_at <= now() AND NOT EXISTS (
			       SELECT 1 FROM stored_responses c WHERE c.previous_id = r.id))
			LIMIT $1 FOR UPDATE SKIP LOCKED)`, batch)
	if err != nil {
		return 0, fmt.Errorf("purge stored responses: %w", err)
	}
	return tag.RowsAffected(), nil
}
