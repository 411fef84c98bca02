package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"modelgateway/core/store"
)

// usageFixture is a profile whose requests were settled through Store.Settle over four UTC
// days, by two keys on two models, many sharing a start time: charged ones, uncharged ones,
// charges capped when the balance ran out, and refunded ones. want holds each request as the
// test saw it charged, independently of what the store reads back.
type usageFixture struct {
	st      *store.Store
	profile uuid.UUID
	keys    [2]uuid.UUID
	base    time.Time
	want    map[string]usageSeen
}

type usageSeen struct {
	key          uuid.UUID
	model        string
	start        time.Time
	input, out   int64
	charged      decimal.Decimal // net of a refund
	wasCharged   bool
	wasRefunded  bool
	wasCapped    bool
	chargedGross decimal.Decimal
}

func newUsageFixture(t *testing.T) *usageFixture {
	t.Helper()
	ctx := context.Background()
	st, _ := open(t)
	f := &usageFixture{st: st, profile: uuid.New(), keys: [2]uuid.UUID{uuid.New(), uuid.New()},
		base: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC), want: map[string]usageSeen{}}
	// 30 credited: the charges below come to more, so the last ones are capped.
	if _, err := st.Pool.Exec(ctx, `INSERT INTO profiles (id, currency, balance) VALUES ($1, 'RUB', 30)`, f.profile); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool.Exec(ctx, `INSERT INTO ledger_entries (profile_id, amount, kind) VALUES ($1, 30, 'credit')`, f.profile); err != nil {
		t.Fatal(err)
	}
	for _, k := range f.keys {
		if _, err := st.Pool.Exec(ctx, `INSERT INTO api_keys (id, profile_id, prefix, secret_hash) VALUES ($1, $2, 'x', $3)`, k, f.profile, k[:]); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 32))
	replica := uuid.New()
	for b := range 16 {
		batch := make([]store.Settlement, 10)
		for i := range batch {
			n := b*10 + i
			// Quarter hours of four days, and few of them: many records share a start time,
			// which is what the request_id tie-break of the page order is for.
			start := f.base.Add(time.Duration(rng.IntN(4))*24*time.Hour + time.Duration(rng.IntN(3))*6*time.Hour)
			if n%17 == 0 {
				start = f.base.Add(48*time.Hour - time.Microsecond) // the last instant of day 2
			}
			r := store.RequestRecord{ProfileID: f.profile, RequestID: fmt.Sprintf("u-%03d", n), KeyID: f.keys[rng.IntN(2)],
				Model: []string{"m-a", "m-b"}[rng.IntN(2)], EndpointFamily: "chat.completions", Status: "ok", Currency: "RUB",
				InputTokens: int64(rng.IntN(900)), OutputTokens: int64(rng.IntN(300)), StartTime: start}
			if rng.IntN(5) > 0 {
				// Nine fractional digits: the sums must be exact, not float-close.
				r.Cost = decimal.NewNullDecimal(decimal.New(int64(1+rng.IntN(900_000_000)), -9))
			}
			batch[i] = store.Settlement{Record: r}
		}
		got, err := st.Settle(ctx, replica, batch)
		if err != nil {
			t.Fatalf("settle batch %d: %v", b, err)
		}
		for i, s := range batch {
			r := s.Record
			seen := usageSeen{key: r.KeyID, model: r.Model, start: r.StartTime, input: r.InputTokens, out: r.OutputTokens}
			if got.Charged[i].Valid {
				seen.wasCharged, seen.charged, seen.chargedGross, seen.wasCapped = true, got.Charged[i].Decimal, got.Charged[i].Decimal, got.Capped[i]
			}
			f.want[r.RequestID] = seen
		}
	}
	// Every seventh charged request is refunded afterwards (its answer did not reach the
	// client): its charge stays in the ledger with a reversing entry after it.
	for id, s := range f.want {
		var n int
		fmt.Sscanf(id, "u-%d", &n)
		if s.wasCharged && n%7 == 0 {
			back, err := st.Refund(ctx, f.profile, id, "refunded")
			if err != nil {
				t.Fatal(err)
			}
			if !back.Equal(s.charged) {
				t.Fatalf("refund of %s gave back %s, charged %s", id, back, s.charged)
			}
			s.charged, s.wasRefunded = decimal.Zero, true
			f.want[id] = s
		}
	}
	f.checkLedger(t)
	return f
}

// checkLedger is the ledger invariant, read in one snapshot: balance = sum of entries, never
// below zero.
func (f *usageFixture) checkLedger(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginTxFunc(ctx, f.st.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var bal, sum decimal.Decimal
		if err := tx.QueryRow(ctx, `SELECT balance FROM profiles WHERE id = $1`, f.profile).Scan(&bal); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE profile_id = $1`, f.profile).Scan(&sum); err != nil {
			return err
		}
		if !bal.Equal(sum) || bal.IsNegative() {
			return fmt.Errorf("balance %s, sum of entries %s", bal, sum)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ledger invariant: %v", err)
	}
}

// ledgerCharges is what the ledger's charge entries took for the requests that started in
// [from, to): their charges less their refunds, read from ledger_entries alone.
func (f *usageFixture) ledgerCharges(t *testing.T, from, to time.Time) decimal.Decimal {
	t.Helper()
	var sum decimal.Decimal
	if err := f.st.Pool.QueryRow(context.Background(), `
		SELECT coalesce(-sum(e.amount), 0) FROM ledger_entries e
		WHERE e.profile_id = $1 AND e.kind = 'charge'
			AND coalesce(e.request_id, substr(e.idempotency_key, length('refund ') + 1)) IN (
				SELECT request_id FROM requests WHERE profile_id = $1 AND start_time >= $2 AND start_time < $3)`,
		f.profile, from, to).Scan(&sum); err != nil {
		t.Fatal(err)
	}
	return sum
}

type groupKey struct {
	key   uuid.UUID
	model string
	day   time.Time
}

// expect adds up the fixture's requests that pass the filter by key, model and day.
func (f *usageFixture) expect(flt store.UsageFilter) map[groupKey]store.UsageRow {
	out := map[groupKey]store.UsageRow{}
	for _, s := range f.want {
		if !passes(flt, s) {
			continue
		}
		g := groupKey{s.key, s.model, s.start.Truncate(24 * time.Hour)}
		r := out[g]
		r.KeyID, r.Model, r.Day = g.key, g.model, g.day
		r.Requests++
		r.InputTokens += s.input
		r.OutputTokens += s.out
		r.Cost = r.Cost.Add(s.charged)
		out[g] = r
	}
	return out
}

func passes(f store.UsageFilter, s usageSeen) bool {
	return (f.KeyID == uuid.Nil || s.key == f.KeyID) && (f.Start.IsZero() || !s.start.Before(f.Start)) && (f.End.IsZero() || s.start.Before(f.End))
}

// The summary adds up by key, model and UTC day exactly what was settled; its costs add up,
// in exact decimals, to the ledger's charges for the range (refunds deducted, capped charges
// as taken); requests outside the range or of another key are not in it.
func TestUsageSummaryAddsUpToTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newUsageFixture(t)
	var refunded, capped, uncharged int
	for _, s := range f.want {
		switch {
		case s.wasRefunded:
			refunded++
		case s.wasCapped:
			capped++
		case !s.wasCharged:
			uncharged++
		}
	}
	if refunded == 0 || capped == 0 || uncharged == 0 {
		t.Fatalf("the fixture lacks a case: %d refunded, %d capped, %d uncharged", refunded, capped, uncharged)
	}
	day := 24 * time.Hour
	for _, tc := range []struct {
		name string
		flt  store.UsageFilter
	}{
		{"everything", store.UsageFilter{}},
		{"days 2 and 3", store.UsageFilter{Start: f.base.Add(day), End: f.base.Add(3 * day)}},
		{"one key from day 2 on", store.UsageFilter{KeyID: f.keys[1], Start: f.base.Add(day)}},
		{"up to the end of day 2", store.UsageFilter{End: f.base.Add(2 * day)}},
		{"an empty range", store.UsageFilter{Start: f.base.Add(10 * day), End: f.base.Add(11 * day)}},
	} {
		rows, err := f.st.UsageSummary(ctx, f.profile, tc.flt, store.UsageGroup{Key: true, Model: true, Day: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want := f.expect(tc.flt)
		total, wantTotal := decimal.Zero, decimal.Zero
		for _, w := range want {
			wantTotal = wantTotal.Add(w.Cost)
		}
		if len(rows) != len(want) {
			t.Errorf("%s: %d rows, want %d", tc.name, len(rows), len(want))
		}
		for i, r := range rows {
			total = total.Add(r.Cost)
			w := want[groupKey{r.KeyID, r.Model, r.Day}]
			if r.Requests != w.Requests || r.InputTokens != w.InputTokens || r.OutputTokens != w.OutputTokens || !r.Cost.Equal(w.Cost) {
				t.Errorf("%s: row %v %s %s: %d requests, %d in, %d out, cost %s; want %d, %d, %d, %s", tc.name, r.KeyID, r.Model, r.Day.Format(time.DateOnly),
					r.Requests, r.InputTokens, r.OutputTokens, r.Cost, w.Requests, w.InputTokens, w.OutputTokens, w.Cost)
			}
			if i > 0 && !rowBefore(rows[i-1], r) {
				t.Errorf("%s: rows %d and %d out of order", tc.name, i-1, i)
			}
		}
		if !total.Equal(wantTotal) {
			t.Errorf("%s: summary total %s, the settlements charged %s", tc.name, total, wantTotal)
		}
		if tc.flt.KeyID == uuid.Nil {
			from, to := tc.flt.Start, tc.flt.End
			if to.IsZero() {
				to = f.base.Add(100 * day)
			}
			if ledger := f.ledgerCharges(t, from, to); !total.Equal(ledger) {
				t.Errorf("%s: summary total %s, the ledger's charges %s", tc.name, total, ledger)
			}
		}
		if tc.name == "everything" {
			// The whole ledger: the credit less every charge entry is the balance.
			var charges decimal.Decimal
			if err := f.st.Pool.QueryRow(ctx, `SELECT -sum(amount) FROM ledger_entries WHERE profile_id = $1 AND kind = 'charge'`, f.profile).Scan(&charges); err != nil {
				t.Fatal(err)
			}
			if !total.Equal(charges) || total.IsZero() {
				t.Errorf("summary of everything %s, all the ledger's charges %s", total, charges)
			}
		}
	}

	// Grouped by day alone: one row a day, no key or model, the same total.
	rows, err := f.st.UsageSummary(ctx, f.profile, store.UsageFilter{}, store.UsageGroup{Day: true})
	if err != nil {
		t.Fatal(err)
	}
	byDay := map[time.Time]decimal.Decimal{}
	for _, w := range f.expect(store.UsageFilter{}) {
		byDay[w.Day] = byDay[w.Day].Add(w.Cost)
	}
	if len(rows) != 4 || len(byDay) != 4 {
		t.Fatalf("by day: %d rows, want 4 (%d days)", len(rows), len(byDay))
	}
	for _, r := range rows {
		if r.KeyID != uuid.Nil || r.Model != "" || !r.Cost.Equal(byDay[r.Day]) {
			t.Errorf("by day: row %+v, want cost %s and no key or model", r, byDay[r.Day])
		}
	}
}

func rowBefore(a, b store.UsageRow) bool {
	if !a.Day.Equal(b.Day) {
		return a.Day.Before(b.Day)
	}
	if a.KeyID != b.KeyID {
		return a.KeyID.String() < b.KeyID.String()
	}
	return a.Model < b.Model
}

// Paging through a filtered list visits every record that passes the filter exactly once,
// newest first with request_id breaking ties, whatever the page size; records of another key
// or outside the range never appear.
func TestListUsagePagesVisitEveryRecordOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newUsageFixture(t)
	day := 24 * time.Hour
	for _, flt := range []store.UsageFilter{
		{},
		{KeyID: f.keys[0]},
		{Start: f.base.Add(day), End: f.base.Add(2 * day)},
		{KeyID: f.keys[1], Start: f.base.Add(2 * day)},
	} {
		var want []string
		for id, s := range f.want {
			if passes(flt, s) {
				want = append(want, id)
			}
		}
		if len(want) < 10 || len(want) == len(f.want) && flt != (store.UsageFilter{}) {
			t.Fatalf("filter %+v keeps %d of %d records: not a test of it", flt, len(want), len(f.want))
		}
		for _, size := range []int{1, 7, 1000} {
			var got []*store.RequestRecord
			var after *store.UsageCursor
			for pages := 0; ; pages++ {
				if pages > len(f.want)+1 {
					t.Fatalf("filter %+v, size %d: paging does not end", flt, size)
				}
				page, err := f.st.ListUsage(ctx, f.profile, flt, after, size)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, page...)
				if len(page) < size {
					break
				}
				last := page[len(page)-1]
				after = &store.UsageCursor{StartTime: last.StartTime, RequestID: last.RequestID}
			}
			ids := make([]string, len(got))
			for i, r := range got {
				ids[i] = r.RequestID
				if i > 0 {
					p := got[i-1]
					if !(r.StartTime.Before(p.StartTime) || r.StartTime.Equal(p.StartTime) && r.RequestID < p.RequestID) {
						t.Errorf("filter %+v, size %d: %s (%s) after %s (%s)", flt, size, r.RequestID, r.StartTime, p.RequestID, p.StartTime)
					}
				}
			}
			slices.Sort(ids)
			slices.Sort(want)
			if !slices.Equal(ids, want) {
				t.Errorf("filter %+v, size %d: %d records seen, want %d:\n%v\n%v", flt, size, len(ids), len(want), ids, want)
			}
		}
	}
}
