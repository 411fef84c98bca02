package admin

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/store"
	"modelgateway/core/wire/apierror"
)

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

// ListUsage implements GET /admin/v1/profiles/{id}/usage, newest first.
func (s *Server) ListUsage(ctx context.Context, req *adminv1.ListUsageRequest) (*adminv1.ListUsageResponse, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	f, err := usageFilter(req.GetKeyId(), req.GetStartTime(), req.GetEndTime())
	if err != nil {
		return nil, err
	}
	// AIP-158: a negative size is an error, a size above the maximum is coerced to it.
	size := int(req.GetPageSize())
	switch {
	case size < 0:
		return nil, apierror.New(apierror.InvalidRequest, "page_size must not be negative")
	case size == 0:
		size = defaultPageSize
	case size > maxPageSize:
		size = maxPageSize
	}
	var after *store.UsageCursor
	if tok := req.GetPageToken(); tok != "" {
		after, err = decodeCursor(tok, f)
		if err != nil {
			return nil, apierror.New(apierror.InvalidRequest, "page_token is not valid for this request: %v", err)
		}
	}
	recs, err := s.Store.ListUsage(ctx, id, f, after, size+1)
	if err != nil {
		return nil, err
	}
	resp := &adminv1.ListUsageResponse{Records: []*adminv1.UsageRecord{}}
	if len(recs) > size {
		recs = recs[:size]
		last := recs[size-1]
		resp.NextPageToken = encodeCursor(&store.UsageCursor{StartTime: last.StartTime, RequestID: last.RequestID}, f)
	}
	for _, r := range recs {
		u := &adminv1.UsageRecord{
			RequestId: r.RequestID, KeyId: r.KeyID.String(), Model: r.Model, EndpointFamily: r.EndpointFamily,
			Status: r.Status, InputTokens: r.InputTokens, CachedInputTokens: r.CachedInputTokens,
			CacheWriteTokens: r.CacheWriteTokens, OutputTokens: r.OutputTokens, ReasoningTokens: r.ReasoningTokens,
			UsageReliable: r.UsageReliable, Currency: r.Currency, StartTime: timestamppb.New(r.StartTime),
		}
		if r.Cost.Valid {
			u.Cost = r.Cost.Decimal.String()
		} else if r.Status == store.StatusOK && catalog.IsCountTokensFamily(r.EndpointFamily) {
			// Counting is free: its record has no charge (no ledger entry is written for
			// it), and its cost is zero.
			u.Cost = "0"
		}
		if r.EndTime != nil {
			u.EndTime = timestamppb.New(*r.EndTime)
		}
		u.BatchId, u.CustomId = r.BatchID, r.CustomID
		for _, a := range r.Attempts {
			u.Attempts = append(u.Attempts, &adminv1.UsageAttempt{Provider: a.Provider, UpstreamModel: a.UpstreamModel,
				Status: int32(a.Status), ErrorCode: a.ErrorCode, DurationMs: a.DurationMS})
		}
		resp.Records = append(resp.Records, u)
	}
	return resp, nil
}

// GetUsageSummary implements GET /admin/v1/profiles/{id}/usage:summary.
func (s *Server) GetUsageSummary(ctx context.Context, req *adminv1.GetUsageSummaryRequest) (*adminv1.GetUsageSummaryResponse, error) {
	id, err := parseID("id", req.GetId())
	if err != nil {
		return nil, err
	}
	f, err := usageFilter(req.GetKeyId(), req.GetStartTime(), req.GetEndTime())
	if err != nil {
		return nil, err
	}
	g := store.UsageGroup{Key: true, Model: true, Day: true}
	if by := req.GetGroupBy(); len(by) > 0 {
		g = store.UsageGroup{}
		for _, b := range by {
			switch b {
			case "key":
				g.Key = true
			case "model":
				g.Model = true
			case "day":
				g.Day = true
			default:
				return nil, apierror.New(apierror.InvalidRequest, "group_by: %q is not one of key, model, day", b)
			}
		}
	}
	rows, err := s.Store.UsageSummary(ctx, id, f, g)
	if err != nil {
		return nil, err
	}
	resp := &adminv1.GetUsageSummaryResponse{Rows: make([]*adminv1.UsageSummaryRow, 0, len(rows))}
	for _, r := range rows {
		row := &adminv1.UsageSummaryRow{
			Model: r.Model, Requests: r.Requests, InputTokens: r.InputTokens, CachedInputTokens: r.CachedInputTokens,
			CacheWriteTokens: r.CacheWriteTokens, OutputTokens: r.OutputTokens, Cost: r.Cost.String(),
		}
		if g.Key {
			row.KeyId = r.KeyID.String()
		}
		if g.Day {
			row.Day = r.Day.Format(time.DateOnly)
		}
		resp.Rows = append(resp.Rows, row)
	}
	return resp, nil
}

// usageFilter checks the key and time range shared by ListUsage and GetUsageSummary.
func usageFilter(keyID string, start, end *timestamppb.Timestamp) (store.UsageFilter, error) {
	var f store.UsageFilter
	if keyID != "" {
		k, err := parseID("key_id", keyID)
		if err != nil {
			return f, err
		}
		f.KeyID = k
	}
	for _, t := range []struct {
		name string
		ts   *timestamppb.Timestamp
		to   *time.Time
	}{{"start_time", start, &f.Start}, {"end_time", end, &f.End}} {
		if t.ts == nil {
			continue
		}
		if err := t.ts.CheckValid(); err != nil {
			return f, apierror.New(apierror.InvalidRequest, "%s is not a valid time", t.name)
		}
		*t.to = t.ts.AsTime()
	}
	if !f.Start.IsZero() && !f.End.IsZero() && f.End.Before(f.Start) {
		return f, apierror.New(apierror.InvalidRequest, "end_time is before start_time")
	}
	return f, nil
}

// A page token is opaque to clients (AIP-158): the position after the page's last record and
// the filter it was made under, so that a token used with another key or range is refused
// rather than silently skipping or repeating records. A token without a filter part (made
// before the filters existed) stands for no filter.
func encodeCursor(c *store.UsageCursor, f store.UsageFilter) string {
	return base64.RawURLEncoding.EncodeToString([]byte(c.StartTime.UTC().Format(time.RFC3339Nano) + "|" + c.RequestID + "|" + filterText(f)))
}

func decodeCursor(tok string, f store.UsageFilter) (*store.UsageCursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return nil, err
	}
	ts, rest, ok := strings.Cut(string(raw), "|")
	if !ok {
		return nil, errors.New("malformed cursor")
	}
	// Request ids may hold '|': the filter is after the last one, and it never holds one.
	id, made := rest, ""
	if i := strings.LastIndex(rest, "|"); i >= 0 {
		id, made = rest[:i], rest[i+1:]
	}
	if made != filterText(f) {
		return nil, errors.New("it was made with another key_id, start_time or end_time")
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil, err
	}
	return &store.UsageCursor{StartTime: t, RequestID: id}, nil
}

// filterText is a filter written down for a page token; "" for no filter.
func filterText(f store.UsageFilter) string {
	if f == (store.UsageFilter{}) {
		return ""
	}
	text := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	key := ""
	if f.KeyID != uuid.Nil {
		key = f.KeyID.String()
	}
	return key + "," + text(f.Start) + "," + text(f.End)
}
