package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RecordFxFetch stores a snapshot obtained from a scheduled rate source. When it repeats the
// latest snapshot (same effective date, same rates compared as decimals) no row is inserted;
// instead that row's fetched_at is moved forward to fx.FetchedAt, because fetched_at is what
// decides "current" versus "stale" in the catalogue and a source that keeps confirming the same
// rates (weekends, holidays) is current. It reports whether a new row was inserted.
//
// The check and the write run under a transaction-scoped advisory lock so that replicas fetching
// at the same moment insert one row between them.
func (s *Store) RecordFxFetch(ctx context.Context, fx *FxSnapshot) (inserted bool, err error) {
	rates := make(map[string]string, len(fx.Rates))
	for cur, r := range fx.Rates {
		rates[cur] = r.String()
	}
	err = pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('gateway.fx_fetch'))`); err != nil {
			return fmt.Errorf("lock fx snapshots: %w", err)
		}
		latest, err := latestFx(ctx, tx)
		if err != nil {
			return err
		}
		if latest != nil && sameFx(latest, fx) {
			inserted = false
			_, err := tx.Exec(ctx, `UPDATE fx_snapshots SET fetched_at = $1
				WHERE id = (SELECT id FROM fx_snapshots ORDER BY fetched_at DESC, id DESC LIMIT 1) AND fetched_at < $1`,
				fx.FetchedAt)
			if err != nil {
				return fmt.Errorf("refresh fx snapshot: %w", err)
			}
			return nil
		}
		if _, err := tx.Exec(ctx, `INSERT INTO fx_snapshots (effective_date, fetched_at, rates) VALUES ($1, $2, $3)`,
			fx.EffectiveDate, fx.FetchedAt, rates); err != nil {
			return fmt.Errorf("insert fx snapshot: %w", err)
		}
		inserted = true
		return nil
	})
	return inserted, err
}

// sameFx compares effective dates as calendar dates and rates by value ("0.5" equals "0.50").
func sameFx(a, b *FxSnapshot) bool {
	if a.EffectiveDate.Format(time.DateOnly) != b.EffectiveDate.Format(time.DateOnly) || len(a.Rates) != len(b.Rates) {
		return false
	}
	for cur, r := range a.Rates {
		o, ok := b.Rates[cur]
		if !ok || !o.Equal(r) {
			return false
		}
	}
	return true
}
