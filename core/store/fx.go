package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// FxSnapshot holds units of each quoted currency per 1 unit of the billing currency.
type FxSnapshot struct {
	EffectiveDate time.Time
	FetchedAt     time.Time
	Rates         map[string]decimal.Decimal
}

// SetFxRates records a new snapshot; the newest by fetched_at wins.
func (s *Store) SetFxRates(ctx context.Context, fx *FxSnapshot) error {
	rates := make(map[string]string, len(fx.Rates))
	for cur, r := range fx.Rates {
		rates[cur] = r.String()
	}
	_, err := s.Pool.Exec(ctx, `INSERT INTO fx_snapshots (effective_date, fetched_at, rates) VALUES ($1, $2, $3)`,
		fx.EffectiveDate, fx.FetchedAt, rates)
	if err != nil {
		return fmt.Errorf("insert fx snapshot: %w", err)
	}
	return nil
}

func latestFx(ctx context.Context, tx pgx.Tx) (*FxSnapshot, error) {
	var fx FxSnapshot
	var rates map[string]string
	err := tx.QueryRow(ctx, `SELECT effective_date, fetched_at, rates FROM fx_snapshots ORDER BY fetched_at DESC, id DESC LIMIT 1`).
		Scan(&fx.EffectiveDate, &fx.FetchedAt, &rates)
	if err := interpretError(err); err == ErrNotFound {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("load fx snapshot: %w", err)
	}
	fx.Rates = make(map[string]decimal.Decimal, len(rates))
	for cur, r := range rates {
		d, err := decimal.NewFromString(r)
		if err != nil {
			return nil, fmt.Errorf("fx rate %s: %w", cur, err)
		}
		fx.Rates[cur] = d
	}
	return &fx, nil
}
