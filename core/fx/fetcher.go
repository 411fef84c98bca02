// Package fx keeps the gateway's exchange rates current by fetching them from a configured
// source on a schedule. The admin RPC SetFxRates remains the manual way to set them; both write
// the same fx_snapshots rows.
package fx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"modelgateway/core/catalog"
	"modelgateway/core/store"
)

// CBRDailyURL is the Central Bank of Russia's daily rates document, the documented example source.
const CBRDailyURL = "https://www.cbr.ru/scripts/XML_daily.asp"

// DefaultInterval is the time between successful fetches when Interval is zero.
const DefaultInterval = 6 * time.Hour

// maxBody bounds the source document; the CBR daily one is about 10 KiB.
const maxBody = 1 << 20

// Store records a fetched snapshot; *store.Store implements it. A snapshot equal to the latest
// one (effective date and rates) is not inserted again.
type Store interface {
	RecordFxFetch(ctx context.Context, fx *store.FxSnapshot) (inserted bool, err error)
}

// Rates is one fetched snapshot.
type Rates struct {
	EffectiveDate time.Time                  // the source document's date
	FetchedAt     time.Time                  // when the document was fetched
	Billing       string                     // the billing currency the rates are relative to
	Rates         map[string]decimal.Decimal // units of each currency per 1 unit of Billing
	Inserted      bool                       // a new snapshot row was stored (false: it repeated the latest)
}

// Fetcher fetches CBR-format rates from URL every Interval and stores them.
type Fetcher struct {
	URL      string
	Client   *http.Client  // nil: a client with a 30 s timeout
	Interval time.Duration // between successful fetches; DefaultInterval when zero
	// MinRetry is the first delay after a failure; it doubles per consecutive failure, capped
	// at Interval. One minute when zero.
	MinRetry time.Duration
	Store    Store
	// BillingCurrency is read on every fetch, since applying a catalogue may change it.
	BillingCurrency func() string
	Log             *slog.Logger
}

// Run fetches at once and then every Interval until ctx ends. Failures are logged and retried
// with backoff (MinRetry doubling up to Interval); nothing below Run can end it early, a panic
// included. With no URL it returns at once.
func (f *Fetcher) Run(ctx context.Context) {
	log := f.logger()
	if f.URL == "" {
		log.Info("fx fetcher off: no source URL")
		return
	}
	interval := f.interval()
	var backoff time.Duration
	for {
		wait := interval
		r, err := f.safeFetch(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			backoff = f.nextBackoff(backoff, interval)
			wait = backoff
			log.Warn("fx fetch failed", "url", f.URL, "err", err, "retry_in", wait)
		default:
			backoff = 0
			level := slog.LevelDebug
			if r.Inserted {
				level = slog.LevelInfo
			}
			log.Log(ctx, level, "fx rates fetched", "effective_date", r.EffectiveDate.Format(time.DateOnly),
				"billing", r.Billing, "new_snapshot", r.Inserted)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// safeFetch turns a panic anywhere below into an error so that the schedule survives it.
func (f *Fetcher) safeFetch(ctx context.Context) (r *Rates, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("fx fetch panicked: %v", p)
		}
	}()
	return f.FetchOnce(ctx)
}

// FetchOnce fetches the source, converts it to the current billing currency and stores it
// (unless it repeats the latest snapshot). Nothing is stored on any error.
func (f *Fetcher) FetchOnce(ctx context.Context) (*Rates, error) {
	billing := ""
	if f.BillingCurrency != nil {
		billing = f.BillingCurrency()
	}
	if !slices.Contains(catalog.Currencies, billing) {
		return nil, fmt.Errorf("billing currency %q is not one of %v", billing, catalog.Currencies)
	}
	if f.Store == nil {
		return nil, errors.New("fx fetcher has no store")
	}
	fetchedAt := time.Now().UTC()
	body, err := f.get(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var foreign []string
	for _, c := range catalog.Currencies {
		if c != Rouble {
			foreign = append(foreign, c)
		}
	}
	date, quotes, err := parseCBR(io.LimitReader(body, maxBody), foreign)
	if err != nil {
		return nil, fmt.Errorf("fx source %s: %w", f.URL, err)
	}
	rates, err := crossRates(quotes, billing, catalog.Currencies)
	if err != nil {
		return nil, err
	}
	r := &Rates{EffectiveDate: date, FetchedAt: fetchedAt, Billing: billing, Rates: rates}
	r.Inserted, err = f.Store.RecordFxFetch(ctx, &store.FxSnapshot{EffectiveDate: date, FetchedAt: fetchedAt, Rates: rates})
	if err != nil {
		return nil, fmt.Errorf("store fx snapshot: %w", err)
	}
	return r, nil
}

func (f *Fetcher) get(ctx context.Context) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("fx source request: %w", err)
	}
	// cbr.ru refuses some requests without a browser-like or named agent; name ourselves.
	req.Header.Set("User-Agent", "modelgateway-fx/1")
	req.Header.Set("Accept", "application/xml, text/xml")
	client := f.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fx source %s: %w", f.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		resp.Body.Close()
		return nil, fmt.Errorf("fx source %s: HTTP %d: %q", f.URL, resp.StatusCode, snippet)
	}
	return resp.Body, nil
}

func (f *Fetcher) interval() time.Duration {
	if f.Interval > 0 {
		return f.Interval
	}
	return DefaultInterval
}

func (f *Fetcher) nextBackoff(prev, limit time.Duration) time.Duration {
	next := prev * 2
	if prev == 0 {
		next = f.MinRetry
		if next <= 0 {
			next = time.Minute
		}
	}
	return min(next, limit)
}

func (f *Fetcher) logger() *slog.Logger {
	if f.Log != nil {
		return f.Log
	}
	return slog.Default()
}
