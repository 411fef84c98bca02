package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"modelgateway/core/catalog"
)

// CatalogData is everything the in-memory snapshot is built from, read in one transaction so
// that the snapshot is consistent.
type CatalogData struct {
	Currency     string
	Families     []Family
	Providers    []Provider
	Models       []Model
	Routes       []Route
	Prices       []Price
	Capabilities []Capability
	Fx           *FxSnapshot // latest, nil when none
	Keys         []*Key      // active only
}

// Family is a model family in public catalogue order.
type Family struct {
	ID       string
	Position int
	Active   bool
}

// Provider is an upstream; its credential is read from the named environment variable.
type Provider struct {
	ID, Kind, BaseURL, APIKeyEnv  string
	FirstByteTimeout, IdleTimeout time.Duration
	Active                        bool
	// APIKeyPool is the pool of credential variables when the catalogue lists several
	// (APIKeyEnv is then its first); nil for one.
	APIKeyPool []string
	// RetryAttempts is the attempts per route in all (0 = 1); RetryBackoff the base of the
	// backoff between them (0 = the gateway's default); Cooldown how long a failing route or
	// credential is set aside (0 = the gateway's default).
	RetryAttempts          int
	RetryBackoff, Cooldown time.Duration
}

// KeyEnvs are the provider's credential variables: the pool, or the one api_key_env; nil
// when it sends none.
func (p *Provider) KeyEnvs() []string {
	if len(p.APIKeyPool) > 0 {
		return p.APIKeyPool
	}
	if p.APIKeyEnv != "" {
		return []string{p.APIKeyEnv}
	}
	return nil
}

// Model is a public model.
type Model struct {
	ID, DisplayName, Family, OwnedBy string
	Priority                         int
	Active                           bool
	OutputTokenLimit                 *int32
	Streaming                        bool
	CreateTime                       time.Time
	// BatchPriceFactor multiplies the prices of the model's batch items (1 by default).
	BatchPriceFactor decimal.Decimal
}

// Route is one upstream of a model for some endpoint families; Position is the fallback order.
type Route struct {
	ModelID          string
	Position         int
	EndpointFamilies []string
	ProviderID       string
	UpstreamModel    string
	// Priority orders groups of routes, lowest first: the catalogue's, else Position.
	Priority int
	// Weight is the route's share inside its group, at least 1.
	Weight int
}

// Price is one price set of a model; components per 1M tokens or per request.
type Price struct {
	ModelID                                         string
	Position                                        int
	EndpointFamilies                                []string
	BillingMode                                     string
	Input, CachedInput, CacheWrite, Output, Request decimal.NullDecimal
	AudioInput, AudioOutput                         decimal.NullDecimal
}

// Capability is a verified optional-parameter list (spec 2.3).
type Capability struct {
	ModelID            string
	EndpointFamily     string
	OptionalParameters []string
	VerifiedAt         time.Time
}

// LoadCatalog reads the whole snapshot input in one repeatable-read transaction.
func (s *Store) LoadCatalog(ctx context.Context) (*CatalogData, error) {
	var d CatalogData
	err := pgx.BeginTxFunc(ctx, s.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT value FROM settings WHERE key = 'currency'`).Scan(&d.Currency); err != nil {
			return fmt.Errorf("load currency: %w", err)
		}
		var err error
		if d.Families, err = collect(ctx, tx, `SELECT id, position, active FROM families ORDER BY position, id`, func(r pgx.Rows) (Family, error) {
			var f Family
			return f, r.Scan(&f.ID, &f.Position, &f.Active)
		}); err != nil {
			return fmt.Errorf("load families: %w", err)
		}
		if d.Providers, err = collect(ctx, tx, `SELECT id, kind, base_url, api_key_env, coalesce(first_byte_timeout_ms, 0), coalesce(idle_timeout_ms, 0), active,
				api_key_pool, coalesce(retry_attempts, 0), coalesce(retry_backoff_ms, 0), coalesce(cooldown_ms, 0) FROM providers ORDER BY id`, func(r pgx.Rows) (Provider, error) {
			var p Provider
			var fb, idle, backoff, cooldown int64
			err := r.Scan(&p.ID, &p.Kind, &p.BaseURL, &p.APIKeyEnv, &fb, &idle, &p.Active, &p.APIKeyPool, &p.RetryAttempts, &backoff, &cooldown)
			p.FirstByteTimeout, p.IdleTimeout = time.Duration(fb)*time.Millisecond, time.Duration(idle)*time.Millisecond
			p.RetryBackoff, p.Cooldown = time.Duration(backoff)*time.Millisecond, time.Duration(cooldown)*time.Millisecond
			return p, err
		}); err != nil {
			return fmt.Errorf("load providers: %w", err)
		}
		if d.Models, err = collect(ctx, tx, `SELECT id, display_name, family_id, owned_by, priority, active, output_token_limit, streaming, create_time, batch_price_factor FROM models ORDER BY id`, func(r pgx.Rows) (Model, error) {
			var m Model
			return m, r.Scan(&m.ID, &m.DisplayName, &m.Family, &m.OwnedBy, &m.Priority, &m.Active, &m.OutputTokenLimit, &m.Streaming, &m.CreateTime, &m.BatchPriceFactor)
		}); err != nil {
			return fmt.Errorf("load models: %w", err)
		}
		if d.Routes, err = collect(ctx, tx, `SELECT model_id, position, endpoint_families, provider_id, upstream_model, coalesce(priority, position), weight FROM model_routes ORDER BY model_id, position`, func(r pgx.Rows) (Route, error) {
			var rt Route
			return rt, r.Scan(&rt.ModelID, &rt.Position, &rt.EndpointFamilies, &rt.ProviderID, &rt.UpstreamModel, &rt.Priority, &rt.Weight)
		}); err != nil {
			return fmt.Errorf("load routes: %w", err)
		}
		if d.Prices, err = collect(ctx, tx, `SELECT model_id, position, endpoint_families, billing_mode, input, cached_input, cache_write, output, request, audio_input, audio_output FROM prices WHERE active ORDER BY model_id, position`, func(r pgx.Rows) (Price, error) {
			var p Price
			return p, r.Scan(&p.ModelID, &p.Position, &p.EndpointFamilies, &p.BillingMode, &p.Input, &p.CachedInput, &p.CacheWrite, &p.Output, &p.Request, &p.AudioInput, &p.AudioOutput)
		}); err != nil {
			return fmt.Errorf("load prices: %w", err)
		}
		if d.Capabilities, err = collect(ctx, tx, `SELECT model_id, endpoint_family, optional_parameters, verified_at FROM capabilities ORDER BY model_id, endpoint_family`, func(r pgx.Rows) (Capability, error) {
			var c Capability
			return c, r.Scan(&c.ModelID, &c.EndpointFamily, &c.OptionalParameters, &c.VerifiedAt)
		}); err != nil {
			return fmt.Errorf("load capabilities: %w", err)
		}
		if d.Fx, err = latestFx(ctx, tx); err != nil {
			return err
		}
		if d.Keys, err = collect(ctx, tx, `SELECT `+keyColumns+` FROM api_keys WHERE state = '`+KeyActive+`'`, scanKeyRow); err != nil {
			return fmt.Errorf("load keys: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func collect[T any](ctx context.Context, tx pgx.Tx, sql string, scan func(pgx.Rows) (T, error)) ([]T, error) {
	rows, err := tx.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return collectRows(rows, scan)
}

// collectRows scans every row and closes rows; nil when there are none.
func collectRows[T any](rows pgx.Rows, scan func(pgx.Rows) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// ApplySummary reports what a catalog document changed.
type ApplySummary struct {
	Currency          string
	Families          int
	Providers         int
	Models            int
	DeactivatedModels []string
}

// ErrCurrencyLocked refuses to change the billing currency once money has moved: every
// balance and ledger entry is denominated in it.
var ErrCurrencyLocked = errors.New("the billing currency cannot change once the ledger has entries")

// ErrUnknownReference is a document that names a family or provider that neither it nor the
// catalogue defines.
var ErrUnknownReference = errors.New("unknown reference")

// ApplyCatalog upserts everything the document names in one transaction. Models it names get
// their routes, prices and capabilities replaced wholesale; with Prune, models, providers
// and families it does not name are deactivated.
func (s *Store) ApplyCatalog(ctx context.Context, doc *catalog.Document) (*ApplySummary, error) {
	sum := &ApplySummary{Families: len(doc.Families), Providers: len(doc.Providers), Models: len(doc.Models)}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// One applier at a time: concurrent applies would interleave family renumbering.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('gateway.apply_catalog'))`); err != nil {
			return fmt.Errorf("lock catalogue: %w", err)
		}
		if err := tx.QueryRow(ctx, `SELECT value FROM settings WHERE key = 'currency'`).Scan(&sum.Currency); err != nil {
			return fmt.Errorf("read currency: %w", err)
		}
		if doc.Currency != "" && doc.Currency != sum.Currency {
			var used bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger_entries)`).Scan(&used); err != nil {
				return fmt.Errorf("check ledger: %w", err)
			}
			if used {
				return fmt.Errorf("currency: %w (current %s)", ErrCurrencyLocked, sum.Currency)
			}
			if _, err := tx.Exec(ctx, `UPDATE settings SET value = $1 WHERE key = 'currency'`, doc.Currency); err != nil {
				return fmt.Errorf("set currency: %w", err)
			}
			if _, err := tx.Exec(ctx, `UPDATE profiles SET currency = $1`, doc.Currency); err != nil {
				return fmt.Errorf("set profile currency: %w", err)
			}
			sum.Currency = doc.Currency
		}
		if err := applyFamilies(ctx, tx, doc); err != nil {
			return err
		}
		if err := applyProviders(ctx, tx, doc); err != nil {
			return err
		}
		if err := checkReferences(ctx, tx, doc); err != nil {
			return err
		}
		for i := range doc.Models {
			if err := applyModel(ctx, tx, &doc.Models[i]); err != nil {
				return fmt.Errorf("models[%d] (%s): %w", i, doc.Models[i].ID, err)
			}
		}
		if doc.Prune {
			names := make([]string, len(doc.Models))
			for i, m := range doc.Models {
				names[i] = m.ID
			}
			rows, err := tx.Query(ctx, `UPDATE models SET active = false WHERE active AND id <> ALL($1) RETURNING id`, names)
			if err != nil {
				return fmt.Errorf("prune models: %w", err)
			}
			sum.DeactivatedModels, err = pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return fmt.Errorf("prune models: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sum, nil
}

func applyFamilies(ctx context.Context, tx pgx.Tx, doc *catalog.Document) error {
	ids := make([]string, len(doc.Families))
	for i, f := range doc.Families {
		ids[i] = f.ID
		if _, err := tx.Exec(ctx, `
			INSERT INTO families (id, position, active) VALUES ($1, $2, true)
			ON CONFLICT (id) DO UPDATE SET position = excluded.position, active = true`, f.ID, i); err != nil {
			return fmt.Errorf("families[%d]: %w", i, err)
		}
	}
	// Families the document does not name keep their relative order after the named ones.
	if _, err := tx.Exec(ctx, `
		UPDATE families f SET position = $2 + r.rn, active = f.active AND NOT $3
		FROM (SELECT id, row_number() OVER (ORDER BY position, id) AS rn FROM families WHERE id <> ALL($1)) r
		WHERE f.id = r.id`, ids, len(ids), doc.Prune); err != nil {
		return fmt.Errorf("reorder families: %w", err)
	}
	return nil
}

func applyProviders(ctx context.Context, tx pgx.Tx, doc *catalog.Document) error {
	ids := make([]string, len(doc.Providers))
	for i, p := range doc.Providers {
		ids[i] = p.ID
		if _, err := tx.Exec(ctx, `
			INSERT INTO providers (id, kind, base_url, api_key_env, first_byte_timeout_ms, idle_timeout_ms, active,
				api_key_pool, retry_attempts, retry_backoff_ms, cooldown_ms)
			VALUES ($1, $2, $3, $4, nullif($5, 0), nullif($6, 0), true, $7, nullif($8, 0), nullif($9, 0), nullif($10, 0))
			ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, base_url = excluded.base_url,
				api_key_env = excluded.api_key_env, first_byte_timeout_ms = excluded.first_byte_timeout_ms,
				idle_timeout_ms = excluded.idle_timeout_ms, active = true, api_key_pool = excluded.api_key_pool,
				retry_attempts = excluded.retry_attempts, retry_backoff_ms = excluded.retry_backoff_ms,
				cooldown_ms = excluded.cooldown_ms`,
			p.ID, p.Kind, p.BaseURL, p.APIKeyEnv, p.FirstByteTimeout.Milliseconds(), p.IdleTimeout.Milliseconds(),
			p.APIKeyPool, retryAttempts(p.Retry), retryBackoff(p.Retry).Milliseconds(), p.Cooldown.Milliseconds()); err != nil {
			return fmt.Errorf("providers[%d]: %w", i, err)
		}
	}
	if doc.Prune {
		if _, err := tx.Exec(ctx, `UPDATE providers SET active = false WHERE id <> ALL($1)`, ids); err != nil {
			return fmt.Errorf("prune providers: %w", err)
		}
	}
	return nil
}

func retryAttempts(r *catalog.Retry) int {
	if r == nil {
		return 0
	}
	return r.Attempts
}

func retryBackoff(r *catalog.Retry) time.Duration {
	if r == nil {
		return 0
	}
	return r.Backoff
}

func checkReferences(ctx context.Context, tx pgx.Tx, doc *catalog.Document) error {
	families, providers := doc.References()
	for _, ref := range []struct {
		table, what string
		ids         []string
	}{{"families", "family", families}, {"providers", "provider", providers}} {
		for _, id := range ref.ids {
			var ok bool
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+ref.table+` WHERE id = $1)`, id).Scan(&ok); err != nil {
				return fmt.Errorf("check %s %q: %w", ref.what, id, err)
			}
			if !ok {
				return fmt.Errorf("%w: %s %q is defined neither in the document nor in the catalogue", ErrUnknownReference, ref.what, id)
			}
		}
	}
	return nil
}

func applyModel(ctx context.Context, tx pgx.Tx, m *catalog.Model) error {
	var limit *int32
	if m.OutputTokenLimit != nil {
		v := int32(*m.OutputTokenLimit)
		limit = &v
	}
	factor := decimal.NewFromInt(1)
	if m.BatchPriceFactor != nil {
		factor = *m.BatchPriceFactor
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO models (id, display_name, family_id, owned_by, priority, active, output_token_limit, streaming, batch_price_factor)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (id) DO UPDATE SET display_name = excluded.display_name, family_id = excluded.family_id,
			owned_by = excluded.owned_by, priority = excluded.priority, active = excluded.active,
			output_token_limit = excluded.output_token_limit, streaming = excluded.streaming,
			batch_price_factor = excluded.batch_price_factor`,
		m.ID, m.DisplayName, m.Family, m.OwnedBy, m.Priority, m.Active, limit, m.Streaming, factor); err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	for _, table := range []string{"model_routes", "prices", "capabilities"} {
		if _, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE model_id = $1`, m.ID); err != nil {
			return fmt.Errorf("clear %s: %w", table, err)
		}
	}
	for i, r := range m.Routes {
		if _, err := tx.Exec(ctx, `
			INSERT INTO model_routes (model_id, position, endpoint_families, provider_id, upstream_model, priority, weight)
			VALUES ($1, $2, $3, $4, $5, $6, coalesce($7, 1))`, m.ID, i, r.EndpointFamilies, r.Provider, r.UpstreamModel, r.Priority, r.Weight); err != nil {
			return fmt.Errorf("routes[%d]: %w", i, err)
		}
	}
	for i, p := range m.Prices {
		if _, err := tx.Exec(ctx, `
			INSERT INTO prices (model_id, position, endpoint_families, billing_mode, input, cached_input, cache_write, output, request, audio_input, audio_output)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, m.ID, i, p.EndpointFamilies, p.BillingMode,
			nullDecimal(p.Input), nullDecimal(p.CachedInput), nullDecimal(p.CacheWrite), nullDecimal(p.Output), nullDecimal(p.Request),
			nullDecimal(p.AudioInput), nullDecimal(p.AudioOutput)); err != nil {
			return fmt.Errorf("prices[%d]: %w", i, err)
		}
	}
	for i, c := range m.Capabilities {
		params := c.OptionalParameters
		if params == nil {
			params = []string{} // an empty list is a verified absence, not unknown
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO capabilities (model_id, endpoint_family, optional_parameters, verified_at)
			VALUES ($1, $2, $3, $4)`, m.ID, c.EndpointFamily, params, c.VerifiedAt); err != nil {
			return fmt.Errorf("capabilities[%d]: %w", i, err)
		}
	}
	return nil
}

func nullDecimal(d *decimal.Decimal) decimal.NullDecimal {
	if d == nil {
		return decimal.NullDecimal{}
	}
	return decimal.NullDecimal{Decimal: *d, Valid: true}
}
