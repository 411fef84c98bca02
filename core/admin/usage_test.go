package admin

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apierror"
)

// usageServer is a Server on a fresh database with one profile whose two keys made requests
// on two days: key A three a day at 0.1 each, key B one a day at 0.25, one of B's uncharged.
func usageServer(t *testing.T) (s *Server, profile, keyA, keyB uuid.UUID, day0 time.Time) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	profile, keyA, keyB = uuid.New(), uuid.New(), uuid.New()
	if keyB.String() < keyA.String() { // rows are ordered by key id: A's first
		keyA, keyB = keyB, keyA
	}
	day0 = time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO profiles (id, currency, balance) VALUES ($1, 'RUB', 10)`, []any{profile}},
		{`INSERT INTO ledger_entries (profile_id, amount, kind) VALUES ($1, 10, 'credit')`, []any{profile}},
		{`INSERT INTO api_keys (id, profile_id, prefix, secret_hash) VALUES ($1, $2, 'a', $3), ($4, $2, 'b', $5)`, []any{keyA, profile, keyA[:], keyB, keyB[:]}},
	} {
		if _, err := st.Pool.Exec(ctx, q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	var batch []store.Settlement
	for d := range 2 {
		for i := range 4 {
			r := store.RequestRecord{ProfileID: profile, RequestID: fmt.Sprintf("d%d-%d", d, i), KeyID: keyA, Model: "m",
				EndpointFamily: "chat.completions", Status: "ok", Currency: "RUB", InputTokens: 10, OutputTokens: 5,
				// The same start time for all of a day: the order rests on request_id.
				StartTime: day0.Add(time.Duration(d)*24*time.Hour + 9*time.Hour),
				Cost:      decimal.NewNullDecimal(decimal.RequireFromString("0.1"))}
			end := r.StartTime.Add(time.Second)
			r.EndTime = &end
			if i == 3 {
				r.KeyID, r.Cost = keyB, decimal.NewNullDecimal(decimal.RequireFromString("0.25"))
				if d == 1 {
					r.Cost = decimal.NullDecimal{}
				}
			}
			batch = append(batch, store.Settlement{Record: r})
		}
	}
	if _, err := st.Settle(ctx, uuid.New(), batch); err != nil {
		t.Fatal(err)
	}
	return &Server{Store: st}, profile, keyA, keyB, day0
}

// Through the RPCs: pages follow their tokens over every record of the filter once; a token
// is refused with another filter; bad filters are invalid_request_error; the summary sets
// only the fields it groups by and its costs add up to what was charged.
func TestUsageRPCs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, profile, keyA, keyB, day0 := usageServer(t)
	ts := timestamppb.New

	// Key A from day 1 on, a page at a time: d1-0, d1-1, d1-2, newest first, ties by id descending.
	req := &adminv1.ListUsageRequest{Id: profile.String(), KeyId: keyA.String(), StartTime: ts(day0.Add(24 * time.Hour)), PageSize: 1}
	var seen []string
	var firstToken string
	for range 5 {
		resp, err := s.ListUsage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.GetRecords() {
			seen = append(seen, r.GetRequestId())
		}
		if firstToken == "" {
			firstToken = resp.GetNextPageToken()
		}
		if resp.GetNextPageToken() == "" {
			break
		}
		req.PageToken = resp.GetNextPageToken()
	}
	if fmt.Sprint(seen) != "[d1-2 d1-1 d1-0]" {
		t.Errorf("key A from day 1, a page at a time: %v", seen)
	}
	// The same token with another key, or another range, is refused.
	for _, bad := range []*adminv1.ListUsageRequest{
		{Id: profile.String(), KeyId: keyB.String(), StartTime: ts(day0.Add(24 * time.Hour)), PageToken: firstToken},
		{Id: profile.String(), KeyId: keyA.String(), PageToken: firstToken},
	} {
		if _, err := s.ListUsage(ctx, bad); errCode(err) != apierror.InvalidRequest {
			t.Errorf("token with another filter %v: %v", bad, err)
		}
	}
	// A token in the form made before filters existed still pages an unfiltered list.
	old := base64.RawURLEncoding.EncodeToString([]byte(day0.Add(33*time.Hour).Format(time.RFC3339Nano) + "|d1-1"))
	if resp, err := s.ListUsage(ctx, &adminv1.ListUsageRequest{Id: profile.String(), PageToken: old}); err != nil || len(resp.GetRecords()) != 5 || resp.GetRecords()[0].GetRequestId() != "d1-0" {
		t.Errorf("an old token: %v %v", resp, err)
	}

	for _, tc := range []struct {
		name string
		req  *adminv1.ListUsageRequest
	}{
		{"a key id that is not one", &adminv1.ListUsageRequest{Id: profile.String(), KeyId: "a"}},
		{"an end before the start", &adminv1.ListUsageRequest{Id: profile.String(), StartTime: ts(day0), EndTime: ts(day0.Add(-time.Second))}},
		{"a negative page size", &adminv1.ListUsageRequest{Id: profile.String(), PageSize: -1}},
		{"a token that is not one", &adminv1.ListUsageRequest{Id: profile.String(), PageToken: "%%"}},
	} {
		if _, err := s.ListUsage(ctx, tc.req); errCode(err) != apierror.InvalidRequest {
			t.Errorf("%s: %v", tc.name, err)
		}
	}

	for _, tc := range []struct {
		by   []string
		want []string // key model day requests input cost
	}{
		{nil, []string{
			keyA.String() + " m 2026-11-20 3 30 0.3", keyB.String() + " m 2026-11-20 1 10 0.25",
			keyA.String() + " m 2026-11-21 3 30 0.3", keyB.String() + " m 2026-11-21 1 10 0"}},
		{[]string{"key"}, []string{keyA.String() + "   6 60 0.6", keyB.String() + "   2 20 0.25"}},
		{[]string{"day", "model"}, []string{" m 2026-11-20 4 40 0.55", " m 2026-11-21 4 40 0.3"}},
	} {
		resp, err := s.GetUsageSummary(ctx, &adminv1.GetUsageSummaryRequest{Id: profile.String(), GroupBy: tc.by})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range resp.GetRows() {
			got = append(got, fmt.Sprintf("%s %s %s %d %d %s", r.GetKeyId(), r.GetModel(), r.GetDay(), r.GetRequests(), r.GetInputTokens(), r.GetCost()))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("group by %v:\n%v\nwant\n%v", tc.by, got, tc.want)
		}
	}
	// Key B on day 2 only.
	resp, err := s.GetUsageSummary(ctx, &adminv1.GetUsageSummaryRequest{Id: profile.String(), KeyId: keyB.String(),
		StartTime: ts(day0.Add(24 * time.Hour)), EndTime: ts(day0.Add(48 * time.Hour))})
	if err != nil || len(resp.GetRows()) != 1 || resp.GetRows()[0].GetDay() != "2026-11-21" || resp.GetRows()[0].GetKeyId() != keyB.String() {
		t.Errorf("key B on day 2: %v %v", resp, err)
	}
	if _, err := s.GetUsageSummary(ctx, &adminv1.GetUsageSummaryRequest{Id: profile.String(), GroupBy: []string{"hour"}}); errCode(err) != apierror.InvalidRequest {
		t.Errorf("group by hour: %v", err)
	}
}
