package store

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"
)

// Profile owns a balance shared by its keys.
type Profile struct {
	ID          uuid.UUID
	DisplayName string
	ExternalRef string
	Currency    string
	Balance     decimal.Decimal
	CreateTime  time.Time
}

const profileColumns = `id, display_name, coalesce(external_ref, ''), currency, balance, create_time`

func scanProfile(row pgx.Row) (*Profile, error) {
	var p Profile
	if err := row.Scan(&p.ID, &p.DisplayName, &p.ExternalRef, &p.Currency, &p.Balance, &p.CreateTime); err != nil {
		return nil, interpretError(err)
	}
	return &p, nil
}

// CreateProfile inserts a profile in the current billing currency; an empty external_ref is
// stored as NULL so that only real references are unique.
func (s *Store) CreateProfile(ctx context.Context, displayName, externalRef string) (*Profile, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("new profile id: %w", err)
	}
	return scanProfile(s.Pool.QueryRow(ctx, `
		INSERT INTO profiles (id, display_name, external_ref, currency)
		VALUES ($1, $2, nullif($3, ''), (SELECT value FROM settings WHERE key = 'currency'))
		RETURNING `+profileColumns, id, displayName, externalRef))
}

// GetProfile reads one profile.
func (s *Store) GetProfile(ctx context.Context, id uuid.UUID) (*Profile, error) {
	return scanProfile(s.Pool.QueryRow(ctx, `SELECT `+profileColumns+` FROM profiles WHERE id = $1`, id))
}

// LookupProfile finds a profile by its external reference.
func (s *Store) LookupProfile(ctx context.Context, externalRef string) (*Profile, error) {
	return scanProfile(s.Pool.QueryRow(ctx, `SELECT `+profileColumns+` FROM profiles WHERE external_ref = $1`, externalRef))
}

// CreditResult tells whether a credit was new or a replay of an earlier one.
type CreditResult struct {
	Profile *Profile
	Replay  bool
}

// ErrCreditMismatch is a replayed idempotency key with a different amount: a client bug that
// must not be hidden by answering success.
var ErrCreditMismatch = fmt.Errorf("idempotency key already used with a different amount")

// ErrNegativeBalance refuses an adjustment that would take the balance below zero.
var ErrNegativeBalance = fmt.Errorf("adjustment would make the balance negative")

// ErrReserved refuses an adjustment that would take the balance below what replicas have
// reserved for requests in flight; unused reservations return within seconds.
var ErrReserved = fmt.Errorf("adjustment would take the balance below what is reserved for requests in flight")

// Available is the balance less every replica's unexpired lease (holds on requests in flight
// are taken from leases): what a new request could still be granted.
func (s *Store) Available(ctx context.Context, id uuid.UUID) (decimal.Decimal, error) {
	var v decimal.Decimal
	err := s.Pool.QueryRow(ctx, `
		SELECT p.balance - coalesce((SELECT sum(amount) FROM balance_leases l WHERE l.profile_id = p.id AND l.expires_at > now()), 0)
		FROM profiles p WHERE p.id = $1`, id).Scan(&v)
	return v, interpretError(err)
}

// CreditProfile appends a ledger entry and moves the balance in one transaction. The same
// idempotency key credits once; replays return the profile unchanged.
func (s *Store) CreditProfile(ctx context.Context, id uuid.UUID, amount decimal.Decimal, reason, idempotencyKey string) (*CreditResult, error) {
	var res CreditResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Lock the profile row first: concurrent credits and charges serialise here, which keeps
		// balance = sum(entries) at every commit.
		p, err := scanProfile(tx.QueryRow(ctx, `SELECT `+profileColumns+` FROM profiles WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		var prior decimal.Decimal
		err = tx.QueryRow(ctx, `SELECT amount FROM ledger_entries WHERE profile_id = $1 AND idempotency_key = $2`, id, idempotencyKey).Scan(&prior)
		switch interpretError(err) {
		case nil:
			if !prior.Equal(amount) {
				return ErrCreditMismatch
			}
			res = CreditResult{Profile: p, Replay: true}
			return nil
		case ErrNotFound:
		default:
			return fmt.Errorf("look up idempotency key: %w", err)
		}
		kind := "credit"
		if amount.IsNegative() {
			kind = "adjustment"
			if p.Balance.Add(amount).IsNegative() {
				return ErrNegativeBalance
			}
			// Replicas spend their unexpired leases without asking again: the balance must
			// keep covering them, else their requests would take it below zero.
			var leased decimal.Decimal
			if err := tx.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM balance_leases WHERE profile_id = $1 AND expires_at > now()`, id).Scan(&leased); err != nil {
				return fmt.Errorf("read leases: %w", err)
			}
			if p.Balance.Add(amount).LessThan(leased) {
				return ErrReserved
			}
		}
		if _, err := tx.Exec(ctx, `
			INSERT INTO ledger_entries (profile_id, amount, kind, reason, idempotency_key)
			VALUES ($1, $2, $3, $4, $5)`, id, amount, kind, reason, idempotencyKey); err != nil {
			return fmt.Errorf("insert ledger entry: %w", interpretError(err))
		}
		p, err = scanProfile(tx.QueryRow(ctx, `UPDATE profiles SET balance = balance + $2 WHERE id = $1 RETURNING `+profileColumns, id, amount))
		if err != nil {
			return fmt.Errorf("update balance: %w", err)
		}
		res = CreditResult{Profile: p}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// LedgerSum is the sum of a profile's ledger entries, for invariant checks.
func (s *Store) LedgerSum(ctx context.Context, id uuid.UUID) (decimal.Decimal, error) {
	var sum decimal.Decimal
	err := s.Pool.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM ledger_entries WHERE profile_id = $1`, id).Scan(&sum)
	return sum, interpretError(err)
}
