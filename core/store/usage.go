package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
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
	// Attempts are the request's upstream calls in order (contract.md, "Routing").
	Attempts []AttemptRecord
	// BatchID and CustomID name the batch item the request ran (empty for live requests).
	BatchID, CustomID string
}

// AttemptRecord is one upstream call of a request: Status the HTTP status the upstream
// answered (0 when none came), ErrorCode empty for the attempt that answered.
type AttemptRecord struct {
	Provider      string `json:"provider"`
	UpstreamModel string `json:"upstream_model"`
	Status        int    `json:"status"`
	ErrorCode     string `json:"error_code"`
	DurationMS    int64  `json:"duration_ms"`
}

// appendAttempts writes attempts as the JSON the requests table keeps, without reflection:
// it runs once per settled request.
func appendAttempts(b []byte, as []AttemptRecord) []byte {
	b = append(b, '[')
	for i, a := range as {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"provider":`...)
		b = appendJSONString(b, a.Provider)
		b = append(b, `,"upstream_model":`...)
		b = appendJSONString(b, a.UpstreamModel)
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(a.Status), 10)
		b = append(b, `,"error_code":`...)
		b = appendJSONString(b, a.ErrorCode)
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, a.DurationMS, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSONString quotes s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// UsageCursor is the position after the last record of a page.
type UsageCursor struct {
	StartTime time.Time
	RequestID string
}

// UsageFilter narrows a profile's records: to one key (uuid.Nil: every key) and to a range
// of start times, Start inclusive and End exclusive (a zero time leaves that side open).
type UsageFilter struct {
	KeyID      uuid.UUID
	Start, End time.Time
}

// args are the filter's query parameters: NULL for what is not narrowed.
func (f UsageFilter) args() (key *uuid.UUID, start, end *time.Time) {
	if f.KeyID != uuid.Nil {
		key = &f.KeyID
	}
	if !f.Start.IsZero() {
		start = &f.Start
	}
	if !f.End.IsZero() {
		end = &f.End
	}
	return key, start, end
}

// ListUsage pages through a profile's request records that pass the filter, newest first:
// start_time, then request_id, both descending, so that a cursor names one place in a total
// order and paging visits every record once even when many share a start time.
func (s *Store) ListUsage(ctx context.Context, profileID uuid.UUID, f UsageFilter, after *UsageCursor, limit int) ([]*RequestRecord, error) {
	var afterTime *time.Time
	var afterID string
	if after != nil {
		afterTime, afterID = &after.StartTime, after.RequestID
	}
	key, start, end := f.args()
	rows, err := s.Pool.Query(ctx, `
		SELECT profile_id, request_id, key_id, model_id, endpoint_family, status, currency,
			input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
			usage_reliable, cost, start_time, end_time, attempts,
			coalesce((SELECT bi.batch_id || ' ' || bi.custom_id FROM batch_items bi WHERE bi.request_id = requests.request_id), '')
		FROM requests
		WHERE profile_id = $1 AND ($2::timestamptz IS NULL OR (start_time, request_id) < ($2, $3))
			AND ($5::uuid IS NULL OR key_id = $5)
			AND ($6::timestamptz IS NULL OR start_time >= $6)
			AND ($7::timestamptz IS NULL OR start_time < $7)
		ORDER BY start_time DESC, request_id DESC
		LIMIT $4`, profileID, afterTime, afterID, limit, key, start, end)
	if err != nil {
		return nil, fmt.Errorf("list usage: %w", err)
	}
	defer rows.Close()
	var out []*RequestRecord
	for rows.Next() {
		var r RequestRecord
		var attempts []byte
		var item string
		if err := rows.Scan(&r.ProfileID, &r.RequestID, &r.KeyID, &r.Model, &r.EndpointFamily, &r.Status, &r.Currency,
			&r.InputTokens, &r.CachedInputTokens, &r.CacheWriteTokens, &r.OutputTokens, &r.ReasoningTokens,
			&r.UsageReliable, &r.Cost, &r.StartTime, &r.EndTime, &attempts, &item); err != nil {
			return nil, fmt.Errorf("scan usage: %w", err)
		}
		// A batch id has no space; a custom_id may.
		r.BatchID, r.CustomID, _ = strings.Cut(item, " ")
		if len(attempts) > 0 {
			if err := json.Unmarshal(attempts, &r.Attempts); err != nil {
				return nil, fmt.Errorf("usage %s: attempts: %w", r.RequestID, err)
			}
		}
		out = append(out, &r)
	}
	return out, rows.Err()
}

// UsageGroup is what a usage summary adds up by.
type UsageGroup struct {
	Key, Model, Day bool
}

// UsageRow is one group of a usage summary; the fields not grouped by are zero.
type UsageRow struct {
	KeyID uuid.UUID
	Model string
	// Midnight UTC of the day.
	Day                            time.Time
	Requests                       int64
	InputTokens, CachedInputTokens int64
	CacheWriteTokens, OutputTokens int64
	Cost                           decimal.Decimal
}

// UsageSummary adds up a profile's request records that pass the filter by the group's
// fields, ordered by day, key and model. A row's cost is read from the ledger, not from the
// records: each request's charge entry less its refund entry (Refund writes that reversal as
// a charge entry of its own keyed 'refund <request id>'), so the rows add up exactly, in
// numeric, to the charges the ledger holds for the range's requests.
func (s *Store) UsageSummary(ctx context.Context, profileID uuid.UUID, f UsageFilter, g UsageGroup) ([]UsageRow, error) {
	key, start, end := f.args()
	// Two scalar lookups rather than one OR: each is served by its own unique index
	// (profile_id, request_id) and (profile_id, idempotency_key).
	rows, err := s.Pool.Query(ctx, `
		SELECT CASE WHEN $5 THEN r.key_id END AS k,
			CASE WHEN $6 THEN r.model_id END AS m,
			CASE WHEN $7 THEN (r.start_time AT TIME ZONE 'UTC')::date END AS d,
			count(*), sum(r.input_tokens)::bigint, sum(r.cached_input_tokens)::bigint,
			sum(r.cache_write_tokens)::bigint, sum(r.output_tokens)::bigint,
			coalesce(sum(
				coalesce((SELECT -e.amount FROM ledger_entries e
					WHERE e.profile_id = r.profile_id AND e.request_id = r.request_id AND e.kind = 'charge'), 0)
				+ coalesce((SELECT -e.amount FROM ledger_entries e
					WHERE e.profile_id = r.profile_id AND e.idempotency_key = 'refund ' || r.request_id AND e.kind = 'charge'), 0)
			), 0)::numeric
		FROM requests r
		WHERE r.profile_id = $1
			AND ($2::uuid IS NULL OR r.key_id = $2)
			AND ($3::timestamptz IS NULL OR r.start_time >= $3)
			AND ($4::timestamptz IS NULL OR r.start_time < $4)
		GROUP BY 1, 2, 3
		ORDER BY 3, 1, 2`, profileID, key, start, end, g.Key, g.Model, g.Day)
	if err != nil {
		return nil, fmt.Errorf("usage summary: %w", err)
	}
	defer rows.Close()
	var out []UsageRow
	for rows.Next() {
		var u UsageRow
		var k *uuid.UUID
		var m *string
		var d *time.Time
		if err := rows.Scan(&k, &m, &d, &u.Requests, &u.InputTokens, &u.CachedInputTokens, &u.CacheWriteTokens, &u.OutputTokens, &u.Cost); err != nil {
			return nil, fmt.Errorf("scan usage summary: %w", err)
		}
		if k != nil {
			u.KeyID = *k
		}
		if m != nil {
			u.Model = *m
		}
		if d != nil {
			u.Day = time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}
