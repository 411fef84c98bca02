package rpc

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	catalogv1 "modelgateway/gen/gateway/catalog/v1"

	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// Spec 2.2: rates are current for 36 h after they were fetched (inclusive), stale after,
// unavailable when there are none; an operator's FxFreshFor replaces the 36 h.
func TestCatalogFxStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := snapshot.NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	status := func(s *CatalogServer) (string, *catalogv1.Catalog) {
		t.Helper()
		cat, err := s.GetCatalog(ctx, &catalogv1.GetCatalogRequest{Currency: "USD"})
		if err != nil {
			t.Fatal(err)
		}
		return cat.GetSnapshot().GetFxStatus(), cat
	}
	if got, cat := status(&CatalogServer{Snapshots: h}); got != FxUnavailable || cat.GetSnapshot().GetFetchedAt() != nil {
		t.Errorf("no rates: %s %v", got, cat.GetSnapshot())
	}

	fetched := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	if err := st.SetFxRates(ctx, &store.FxSnapshot{EffectiveDate: fetched, FetchedAt: fetched, Rates: map[string]decimal.Decimal{"USD": decimal.RequireFromString("0.01")}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) func() time.Time { return func() time.Time { return fetched.Add(d) } }
	cases := []struct {
		name  string
		fresh time.Duration
		now   time.Duration
		want  string
	}{
		{"just fetched", 0, 0, FxCurrent},
		{"exactly 36 h old", 0, 36 * time.Hour, FxCurrent},
		{"a moment past 36 h", 0, 36*time.Hour + time.Nanosecond, FxStale},
		{"a week old", 0, 7 * 24 * time.Hour, FxStale},
		{"an operator's 1 h, 59 min old", time.Hour, 59 * time.Minute, FxCurrent},
		{"an operator's 1 h, 61 min old", time.Hour, 61 * time.Minute, FxStale},
	}
	for _, c := range cases {
		got, cat := status(&CatalogServer{Snapshots: h, FxFreshFor: c.fresh, Now: at(c.now)})
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		if !cat.GetSnapshot().GetFetchedAt().AsTime().Equal(fetched) || cat.GetSnapshot().GetEffectiveDate().GetValue() != "2026-11-20" {
			t.Errorf("%s: snapshot block %v", c.name, cat.GetSnapshot())
		}
	}
	// Without an injected clock the real one is used: rates fetched in 2026-11-20 are stale by
	// now only if now is past 2026-11-21 21:00 UTC.
	got, _ := status(&CatalogServer{Snapshots: h})
	if want := map[bool]string{true: FxStale, false: FxCurrent}[time.Since(fetched) > 36*time.Hour]; got != want {
		t.Errorf("real clock: %s, want %s", got, want)
	}
}
