package fx_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"modelgateway/core/fx"
	"modelgateway/core/store"
)

func sample(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/cbr_daily.xml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// source is an httptest CBR endpoint; the document can be swapped and requests are counted.
type source struct {
	*httptest.Server
	doc      atomic.Pointer[[]byte]
	hits     atomic.Int64
	failures atomic.Int64 // the next this-many requests answer 503
	oneByte  bool         // write the body one flushed byte at a time
}

func newSource(t *testing.T, doc []byte) *source {
	t.Helper()
	s := &source{}
	s.doc.Store(&doc)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if s.failures.Add(-1) >= 0 {
			http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/xml; charset=windows-1251")
		body := *s.doc.Load()
		if !s.oneByte {
			_, _ = w.Write(body)
			return
		}
		for i := range body {
			_, _ = w.Write(body[i : i+1])
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *source) waitHits(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.hits.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("source got %d requests, want %d", s.hits.Load(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fakeStore records what it is asked to store; it inserts everything.
type fakeStore struct {
	mu    sync.Mutex
	got   []*store.FxSnapshot
	err   error
	panic bool
}

func (f *fakeStore) RecordFxFetch(_ context.Context, s *store.FxSnapshot) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.panic {
		f.panic = false
		panic("store exploded")
	}
	if f.err != nil {
		return false, f.err
	}
	f.got = append(f.got, s)
	return true, nil
}

func (f *fakeStore) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.got)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func billing(cur string) func() string { return func() string { return cur } }

func TestFetchOnceStoresExactRatesFromTheSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, billing string
		oneByte       bool
		want          map[string]string
	}{
		{"billing RUB inverts CBR quotes, dividing by Nominal", "RUB", false,
			map[string]string{"USD": "0.0123100406847", "EUR": "0.0106243505866", "CNY": "0.0890110516122"}},
		{"billing USD crosses through RUB", "USD", false,
			map[string]string{"RUB": "81.2345", "EUR": "0.863063807725", "CNY": "7.23076827219"}},
		{"a body arriving one byte at a time parses the same", "USD", true,
			map[string]string{"RUB": "81.2345", "EUR": "0.863063807725", "CNY": "7.23076827219"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := newSource(t, sample(t))
			src.oneByte = tt.oneByte
			st := &fakeStore{}
			f := &fx.Fetcher{URL: src.URL, Store: st, BillingCurrency: billing(tt.billing), Log: quiet()}
			before := time.Now()
			r, err := f.FetchOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if st.calls() != 1 {
				t.Fatalf("store called %d times, want 1", st.calls())
			}
			stored := st.got[0]
			got := map[string]string{}
			for c, v := range stored.Rates {
				got[c] = v.String()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stored rates (-want +got):\n%s", diff)
			}
			if d := stored.EffectiveDate.Format(time.DateOnly); d != "2026-11-21" {
				t.Errorf("effective date %s, want the document's 2026-11-21", d)
			}
			if stored.FetchedAt.Before(before) || stored.FetchedAt.After(time.Now()) {
				t.Errorf("fetched_at %v is not the time of the fetch", stored.FetchedAt)
			}
			if r.Billing != tt.billing || !r.Inserted || len(r.Rates) != len(tt.want) {
				t.Errorf("returned %+v", r)
			}
		})
	}
}

func TestFetchOnceStoresNothingOnFailure(t *testing.T) {
	t.Parallel()
	good := sample(t)
	tests := []struct {
		name     string
		doc      []byte
		failures int64
		billing  string
		wantErr  string
	}{
		{"malformed document", good[:len(good)/2], 0, "RUB", "decode"},
		{"document without CNY", []byte(strings.Replace(string(good), "<CharCode>CNY<", "<CharCode>CNX<", 1)), 0, "RUB", "no CNY"},
		{"source answers 503", good, 1, "RUB", "HTTP 503"},
		{"billing currency not loaded yet", good, 0, "", "billing currency"},
		{"billing currency the gateway does not support", good, 0, "GBP", "billing currency"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src := newSource(t, tt.doc)
			src.failures.Store(tt.failures)
			st := &fakeStore{}
			f := &fx.Fetcher{URL: src.URL, Store: st, BillingCurrency: billing(tt.billing), Log: quiet()}
			_, err := f.FetchOnce(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
			}
			if n := st.calls(); n != 0 {
				t.Errorf("store called %d times on failure", n)
			}
		})
	}
}

// runFetcher starts f.Run and returns a function that stops it and waits for it to return.
func runFetcher(t *testing.T, f *fx.Fetcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestRunRetriesFailuresAndSurvivesPanics(t *testing.T) {
	t.Parallel()
	src := newSource(t, sample(t))
	src.failures.Store(2) // two 503s, then a store panic, then a store error, then success
	st := &fakeStore{panic: true}
	f := &fx.Fetcher{URL: src.URL, Interval: time.Hour, MinRetry: time.Millisecond, Store: st,
		BillingCurrency: billing("RUB"), Log: quiet()}
	stop := runFetcher(t, f)
	src.waitHits(t, 3) // the third request reaches the panicking store
	st.mu.Lock()
	st.err = errors.New("database down")
	st.mu.Unlock()
	src.waitHits(t, 4)
	st.mu.Lock()
	st.err = nil
	st.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for st.calls() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	if st.calls() != 1 {
		t.Errorf("store got %d snapshots, want 1 after the retries", st.calls())
	}
	// After a success the next fetch waits the full hour: no more requests arrive.
	if h := src.hits.Load(); h > 6 {
		t.Errorf("source got %d requests; a success should wait for Interval", h)
	}
}

func TestRunWithoutURLReturnsAtOnce(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	go func() { defer close(done); (&fx.Fetcher{Log: quiet()}).Run(context.Background()) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run without a URL kept running")
	}
}
