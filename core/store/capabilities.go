package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// UpsertCapability records the optional parameters verified for a model on an endpoint
// family (spec 2.3), replacing what was there. An empty list is stored as an empty array: a
// verified absence of every parameter, which is not the same as no entry (unknown). The
// table's trigger wakes every replica's snapshot. ErrNotFound when the model does not exist.
func (s *Store) UpsertCapability(ctx context.Context, modelID, family string, params []string, verifiedAt time.Time) error {
	if params == nil {
		params = []string{}
	}
	_, err := s.Pool.Exec(ctx, `
		INSERT INTO capabilities (model_id, endpoint_family, optional_parameters, verified_at)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (model_id, endpoint_family) DO UPDATE
			SET optional_parameters = excluded.optional_parameters, verified_at = excluded.verified_at`,
		modelID, family, params, verifiedAt)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" { // foreign_key_violation: no such model
		return fmt.Errorf("capability of model %q: %w", modelID, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("upsert capability of model %q on %s: %w", modelID, family, err)
	}
	return nil
}
