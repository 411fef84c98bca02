package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// Key is an API key row; the secret itself is never stored, only its hash.
type Key struct {
	ID               uuid.UUID
	ProfileID        uuid.UUID
	Name             string
	Prefix           string
	SecretHash       []byte
	AllowedEndpoints []string
	AllowedModels    []string
	State            string
	CreateTime       time.Time
	// MaxConcurrent and MaxRPS limit the key's requests in flight and per second across
	// replicas; 0 is no limit.
	MaxConcurrent, MaxRPS int32
	// MaxTPM limits the key's input + output tokens per rolling minute across replicas; 0 is
	// no limit.
	MaxTPM int32
	// Budget caps the key's charges per window; nil is no budget.
	Budget *Budget
	// ExpireTime: from then on the key is refused as invalid; nil never.
	ExpireTime *time.Time
}

// Budget is a key's spend cap: Amount per Period (BudgetTotal, BudgetDay, BudgetWeek,
// BudgetMonth; UTC calendar windows, weeks from Monday).
type Budget struct {
	Amount decimal.Decimal
	Period string
}

// Budget periods, as stored (the column's CHECK) and as the AdminService sends them.
const (
	BudgetTotal = "TOTAL"
	BudgetDay   = "DAY"
	BudgetWeek  = "WEEK"
	BudgetMonth = "MONTH"
)

// Key states, as stored (the column's CHECK) and as the AdminService sends them. The
// queries name them through these constants, spliced as literals (not parameters) so the
// statements stay what they were.
const (
	KeyActive  = "ACTIVE"
	KeyRevoked = "REVOKED"
)

const keyColumns = `id, profile_id, name, prefix, secret_hash, allowed_endpoints, allowed_models, state, create_time, max_concurrent, max_rps, max_tpm` +
	`, budget_amount, budget_period, expire_time`

func scanKey(row pgx.Row) (*Key, error) {
	var k Key
	var budget decimal.NullDecimal
	var period *string
	if err := row.Scan(&k.ID, &k.ProfileID, &k.Name, &k.Prefix, &k.SecretHash, &k.AllowedEndpoints, &k.AllowedModels, &k.State, &k.CreateTime, &k.MaxConcurrent, &k.MaxRPS, &k.MaxTPM,
		&budget, &period, &k.ExpireTime); err != nil {
		return nil, interpretError(err)
	}
	if budget.Valid && period != nil {
		k.Budget = &Budget{Amount: budget.Decimal, Period: *period}
	}
	return &k, nil
}

// budgetArgs are a budget's two columns as query arguments (NULL for none).
func budgetArgs(b *Budget) (amount, period *string) {
	if b == nil {
		return nil, nil
	}
	a := b.Amount.String()
	return &a, &b.Period
}

// scanKeyRow is scanKey for collectRows.
func scanKeyRow(rows pgx.Rows) (*Key, error) { return scanKey(rows) }

// CreateKey inserts a key for an existing profile.
func (s *Store) CreateKey(ctx context.Context, k *Key) (*Key, error) {
	return createKey(ctx, s.Pool, k)
}

func createKey(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, k *Key) (*Key, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("new key id: %w", err)
	}
	amount, period := budgetArgs(k.Budget)
	return scanKey(q.QueryRow(ctx, `
		INSERT INTO api_keys (id, profile_id, name, prefix, secret_hash, allowed_endpoints, allowed_models, max_concurrent, max_rps, max_tpm,
			budget_amount, budget_period, expire_time)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::numeric, $12, $13)
		RETURNING `+keyColumns, id, k.ProfileID, k.Name, k.Prefix, k.SecretHash, k.AllowedEndpoints, k.AllowedModels, k.MaxConcurrent, k.MaxRPS, k.MaxTPM,
		amount, period, k.ExpireTime))
}

// GetKey reads one key.
func (s *Store) GetKey(ctx context.Context, id uuid.UUID) (*Key, error) {
	return scanKey(s.Pool.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1`, id))
}

// ListKeys lists a profile's keys, oldest first.
func (s *Store) ListKeys(ctx context.Context, profileID uuid.UUID) ([]*Key, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE profile_id = $1 ORDER BY create_time, id`, profileID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	return collectRows(rows, scanKeyRow)
}

// KeyUpdate names the fields to change; nil means unchanged.
type KeyUpdate struct {
	Name             *string
	AllowedEndpoints []string // nil = unchanged
	AllowedModels    []string // nil = unchanged
	MaxConcurrent    *int32
	MaxRPS           *int32
	MaxTPM           *int32
	// SetBudget replaces the budget with Budget (nil: none); SetExpire the expiry with
	// ExpireTime (nil: never).
	SetBudget  bool
	Budget     *Budget
	SetExpire  bool
	ExpireTime *time.Time
}

// ErrKeyRevoked refuses changes to a revoked key.
var ErrKeyRevoked = fmt.Errorf("key is revoked")

// UpdateKey changes the policy or name of an active key.
//
// gateway_settle keeps a key's spend per day (key_spend) only while the key has a budget, so
// that settling the charges of keys without one costs no write for them. A budget set on a key
// without one therefore rebuilds the key's key_spend from its request records (and those of
// the keys it replaced), so that the new budget counts what its window already spent. The
// rebuild runs under a lock on the key's profile that gateway_settle's lock waits for: a
// settlement that committed first saw no budget and has its records counted by the rebuild,
// one after it sees the budget and adds to key_spend itself.
func (s *Store) UpdateKey(ctx context.Context, id uuid.UUID, u KeyUpdate) (*Key, error) {
	k, err := s.updateKeySpend(ctx, id, u)
	if errors.Is(err, ErrNotFound) {
		if _, getErr := s.GetKey(ctx, id); getErr == nil {
			return nil, ErrKeyRevoked
		}
	}
	return k, err
}

// updateKeySpend updates the key, rebuilding its key_spend when a budget is set on it.
func (s *Store) updateKeySpend(ctx context.Context, id uuid.UUID, u KeyUpdate) (*Key, error) {
	if !u.SetBudget || u.Budget == nil {
		return updateKey(ctx, s.Pool, id, u)
	}
	var k *Key
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var profile uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT profile_id FROM api_keys WHERE id = $1`, id).Scan(&profile); err != nil {
			return interpretError(err)
		}
		// FOR SHARE: gateway_settle's FOR UPDATE waits for it; a rotation's foreign-key
		// check (FOR KEY SHARE) does not, so the two cannot deadlock over the key's row.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM profiles WHERE id = $1 FOR SHARE`, profile); err != nil {
			return fmt.Errorf("lock profile: %w", err)
		}
		var had bool
		if err := tx.QueryRow(ctx, `SELECT budget_amount IS NOT NULL FROM api_keys WHERE id = $1 FOR UPDATE`, id).Scan(&had); err != nil {
			return interpretError(err)
		}
		var err error
		if k, err = updateKey(ctx, tx, id, u); err != nil || had {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM key_spend WHERE key_id = $1`, id); err != nil {
			return fmt.Errorf("rebuild key spend: %w", err)
		}
		_, err = tx.Exec(ctx, `
			WITH RECURSIVE chain(id) AS (
				SELECT $1::uuid
				UNION
				SELECT a.id FROM api_keys a JOIN chain c ON a.replaced_by = c.id WHERE a.profile_id = $2
			)
			INSERT INTO key_spend (key_id, day, spent)
			SELECT $1, (r.start_time AT TIME ZONE 'UTC')::date, sum(r.cost)
			FROM requests r WHERE r.profile_id = $2 AND r.key_id IN (SELECT id FROM chain) AND r.cost IS NOT NULL AND r.cost <> 0
			GROUP BY 2`, id, profile)
		if err != nil {
			return fmt.Errorf("rebuild key spend: %w", err)
		}
		return nil
	})
	return k, err
}

// updateKey is UpdateKey's one statement.
func updateKey(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, id uuid.UUID, u KeyUpdate) (*Key, error) {
	amount, period := budgetArgs(u.Budget)
	return scanKey(q.QueryRow(ctx, `
		UPDATE api_keys SET
			name = coalesce($2, name),
			allowed_endpoints = coalesce($3, allowed_endpoints),
			allowed_models = coalesce($4, allowed_models),
			max_concurrent = coalesce($5, max_concurrent),
			max_rps = coalesce($6, max_rps),
			max_tpm = coalesce($7, max_tpm),
			budget_amount = CASE WHEN $8 THEN $9::numeric ELSE budget_amount END,
			budget_period = CASE WHEN $8 THEN $10 ELSE budget_period END,
			expire_time = CASE WHEN $11 THEN $12 ELSE expire_time END
		WHERE id = $1 AND state = '`+KeyActive+`'
		RETURNING `+keyColumns, id, u.Name, u.AllowedEndpoints, u.AllowedModels, u.MaxConcurrent, u.MaxRPS, u.MaxTPM,
		u.SetBudget, amount, period, u.SetExpire, u.ExpireTime))
}

// RevokeKey marks a key revoked; revoking twice is a no-op that returns the key.
func (s *Store) RevokeKey(ctx context.Context, id uuid.UUID) (*Key, error) {
	return scanKey(s.Pool.QueryRow(ctx, `
		UPDATE api_keys SET state = '`+KeyRevoked+`', revoke_time = coalesce(revoke_time, now())
		WHERE id = $1
		RETURNING `+keyColumns, id))
}

// RotateKey revokes an active key and creates its replacement with the same policy in one
// transaction, so there is never a moment with both or neither usable.
func (s *Store) RotateKey(ctx context.Context, id uuid.UUID, prefix string, secretHash []byte) (*Key, error) {
	var created *Key
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		old, err := scanKey(tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		if old.State != KeyActive {
			return ErrKeyRevoked
		}
		created, err = createKey(ctx, tx, &Key{
			ProfileID: old.ProfileID, Name: old.Name, Prefix: prefix, SecretHash: secretHash,
			AllowedEndpoints: old.AllowedEndpoints, AllowedModels: old.AllowedModels,
			MaxConcurrent: old.MaxConcurrent, MaxRPS: old.MaxRPS, MaxTPM: old.MaxTPM, Budget: old.Budget, ExpireTime: old.ExpireTime,
		})
		if err != nil {
			return fmt.Errorf("create replacement key: %w", err)
		}
		_, err = tx.Exec(ctx, `UPDATE api_keys SET state = '`+KeyRevoked+`', revoke_time = now(), replaced_by = $2 WHERE id = $1`, id, created.ID)
		if err != nil {
			return interpretError(err)
		}
		// The replacement's budget windows carry on from what the old key spent: a rotation
		// does not give a key its budget again.
		_, err = tx.Exec(ctx, `INSERT INTO key_spend (key_id, day, spent) SELECT $2, day, spent FROM key_spend WHERE key_id = $1`, id, created.ID)
		return interpretError(err)
	})
	return created, err
}

// ActiveKeys loads every active key for the in-memory snapshot.
func (s *Store) ActiveKeys(ctx context.Context) ([]*Key, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE state = '`+KeyActive+`'`)
	if err != nil {
		return nil, fmt.Errorf("load keys: %w", err)
	}
	return collectRows(rows, scanKeyRow)
}
