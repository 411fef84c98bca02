package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
)

// RequestRecord is one request that passed the key checks.
type RequestRecord struct {
	ProfileID                                       uuid.UUID
	RequestID                                       string
	KeyID                                           uuid.UUID
	Model, EndpointFamily, Status, Currency         string
	InputTokens, CachedInputTokens                  int64
	CacheWriteTokens, OutputTokens, ReasoningTokens int64
	// The audio parts of InputTokens and OutputTokens.
	AudioInputTokens, AudioOutputTokens int64
	UsageReliable                       bool
	Cost                                decimal.NullDecimal
	StartTime                           time.Time
	EndTime                             *time.Time
}

// UsageCursor is the position after the last record of a page.
type UsageCursor struct {
	StartTime time.Time
	RequestID string
}

// ListUsage pages through a profile's request records, newest first.
func (s *Store) ListUsage(ctx context.Context, profileID uuid.UUID, after *UsageCursor, limit int) ([]*RequestRecord, error) {
	var afterTime *time.Time
	var afterID string
	if after != nil {
		afterTime, afterID = &after.StartTime, after.RequestID
	}
	rows, err := s.Pool.Query(ctx, `
		SELECT profile_id, request_id, key_id, model_id, endpoint_family, status, currency,
			input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
			usage_reliable, cost, start_time, end_time
		FROM requests
		WHERE profile_id = $1 AND ($2::timestamptz IS NULL OR (start_time, request_id) < ($2, $3))
		ORDER BY start_time DESC, request_id DESC
		LIMIT $4`, profileID, afterTime, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("list usage: %w", err)
	}
	defer rows.Close()
	var out []*RequestRecord
	for rows.Next() {
		var r RequestRecord
		if err := rows.Scan(&r.ProfileID, &r.RequestID, &r.KeyID, &r.Model, &r.EndpointFamily, &r.Status, &r.Currency,
			&r.InputTokens, &r.CachedInputTokens, &r.CacheWriteTokens, &r.OutputTokens, &r.ReasoningTokens,
			&r.UsageReliable, &r.Cost, &r.StartTime, &r.EndTime); err != nil {
			return nil, fmt.Errorf("scan usage: %w", err)
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}
