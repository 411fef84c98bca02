package fx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"modelgateway/core/fx"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

func fxRows(t *testing.T, st *store.Store) int {
	t.Helper()
	var n int
	if err := st.Pool.QueryRow(context.Background(), `SELECT count(*) FROM fx_snapshots`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func loadFx(t *testing.T, st *store.Store) *store.FxSnapshot {
	t.Helper()
	d, err := st.LoadCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.Fx == nil {
		t.Fatal("LoadCatalog has no Fx snapshot")
	}
	return d.Fx
}

func fxStrings(s *store.FxSnapshot) map[string]string {
	out := map[string]string{"effective_date": s.EffectiveDate.Format(time.DateOnly)}
	for c, r := range s.Rates {
		out[c] = r.String()
	}
	return out
}

// Against PostgreSQL: Run stores one snapshot however often the unchanged document is fetched,
// keeps its fetched_at current, and inserts again when the source publishes a new date.
func TestRunStoresOnceUntilTheSourceChanges(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	src := newSource(t, sample(t))
	f := &fx.Fetcher{URL: src.URL, Interval: 20 * time.Millisecond, Store: st,
		BillingCurrency: billing("RUB"), Log: quiet()}

	stop := runFetcher(t, f)
	src.waitHits(t, 1)
	waitRows(t, st, 1)
	first := loadFx(t, st).FetchedAt
	// Fetches run one after another, so two more requests mean at least one more completed.
	src.waitHits(t, src.hits.Load()+3)
	stop()
	if n := fxRows(t, st); n != 1 {
		t.Fatalf("%d snapshots after repeated fetches of one document, want 1", n)
	}
	got := loadFx(t, st)
	want := map[string]string{"effective_date": "2026-11-21",
		"USD": "0.0123100406847", "EUR": "0.0106243505866", "CNY": "0.0890110516122"}
	if diff := cmp.Diff(want, fxStrings(got)); diff != "" {
		t.Errorf("LoadCatalog Fx (-want +got):\n%s", diff)
	}
	if !got.FetchedAt.After(first) {
		t.Errorf("fetched_at stayed %v after later fetches confirmed the rates", got.FetchedAt)
	}

	next := strings.Replace(strings.Replace(string(sample(t)), `Date="21.11.2026"`, `Date="22.11.2026"`, 1), "81,2345", "80,0000", 1)
	nb := []byte(next)
	src.doc.Store(&nb)
	hits := src.hits.Load()
	stop = runFetcher(t, f)
	src.waitHits(t, hits+3)
	stop()
	if n := fxRows(t, st); n != 2 {
		t.Fatalf("%d snapshots after the source published a new date, want 2", n)
	}
	want = map[string]string{"effective_date": "2026-11-22",
		"USD": "0.0125", "EUR": "0.0106243505866", "CNY": "0.0890110516122"}
	if diff := cmp.Diff(want, fxStrings(loadFx(t, st))); diff != "" {
		t.Errorf("LoadCatalog Fx after the change (-want +got):\n%s", diff)
	}
}

// A changed billing currency changes every rate, so the same document makes a new snapshot.
func TestFetchOnceInsertsAgainWhenTheBillingCurrencyChanges(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	src := newSource(t, sample(t))
	cur := "RUB"
	f := &fx.Fetcher{URL: src.URL, Store: st, BillingCurrency: func() string { return cur }, Log: quiet()}
	ctx := context.Background()
	for i, step := range []struct {
		billing      string
		wantInserted bool
	}{{"RUB", true}, {"RUB", false}, {"USD", true}, {"USD", false}} {
		cur = step.billing
		r, err := f.FetchOnce(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r.Inserted != step.wantInserted {
			t.Errorf("fetch %d (billing %s): inserted %v, want %v", i, step.billing, r.Inserted, step.wantInserted)
		}
	}
	if n := fxRows(t, st); n != 2 {
		t.Errorf("%d snapshots, want 2", n)
	}
	want := map[string]string{"effective_date": "2026-11-21",
		"RUB": "81.2345", "EUR": "0.863063807725", "CNY": "7.23076827219"}
	if diff := cmp.Diff(want, fxStrings(loadFx(t, st))); diff != "" {
		t.Errorf("LoadCatalog Fx (-want +got):\n%s", diff)
	}
}

// Replicas fetching at the same moment insert one row between them.
func TestConcurrentReplicasInsertOneSnapshot(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	src := newSource(t, sample(t))
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			f := &fx.Fetcher{URL: src.URL, Store: st, BillingCurrency: billing("RUB"), Log: quiet()}
			_, err := f.FetchOnce(context.Background())
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := fxRows(t, st); n != 1 {
		t.Errorf("%d snapshots from 8 simultaneous fetches, want 1", n)
	}
}

func waitRows(t *testing.T, st *store.Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for fxRows(t, st) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d fx snapshots in time", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
