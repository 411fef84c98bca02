package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// BotState is one value of the chat bot's durable state.
type BotState struct {
	Key        string
	Value      string
	ExpireTime *time.Time
	UpdateTime time.Time
}

const botStateColumns = `key, value, expire_time, update_time`

func scanBotState(row pgx.Row) (*BotState, error) {
	var b BotState
	if err := row.Scan(&b.Key, &b.Value, &b.ExpireTime, &b.UpdateTime); err != nil {
		return nil, interpretError(err)
	}
	return &b, nil
}

// live is the condition under which a stored value still counts.
const live = `(expire_time IS NULL OR expire_time > now())`

// GetBotState reads an unexpired value.
func (s *Store) GetBotState(ctx context.Context, key string) (*BotState, error) {
	return scanBotState(s.Pool.QueryRow(ctx, `SELECT `+botStateColumns+` FROM bot_state WHERE key = $1 AND `+live, key))
}

// PutBotState writes a value. With onlyIfAbsent an unexpired existing value is kept and
// returned with created false; an expired one counts as absent.
func (s *Store) PutBotState(ctx context.Context, key, value string, expire *time.Time, onlyIfAbsent bool) (*BotState, bool, error) {
	var st *BotState
	created := true
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// Expired values are swept here rather than by a timer: writes are what add rows.
		if _, err := tx.Exec(ctx, `DELETE FROM bot_state WHERE expire_time <= now()`); err != nil {
			return fmt.Errorf("sweep bot state: %w", err)
		}
		q := `INSERT INTO bot_state (key, value, expire_time) VALUES ($1, $2, $3)
		      ON CONFLICT (key) DO UPDATE SET value = excluded.value, expire_time = excluded.expire_time, update_time = now()
		      RETURNING ` + botStateColumns
		if onlyIfAbsent {
			q = `INSERT INTO bot_state (key, value, expire_time) VALUES ($1, $2, $3)
			     ON CONFLICT (key) DO NOTHING RETURNING ` + botStateColumns
		}
		var err error
		st, err = scanBotState(tx.QueryRow(ctx, q, key, value, expire))
		if errors.Is(err, ErrNotFound) && onlyIfAbsent {
			created = false
			st, err = scanBotState(tx.QueryRow(ctx, `SELECT `+botStateColumns+` FROM bot_state WHERE key = $1`, key))
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return st, created, nil
}

// TakeBotState deletes a value and returns it; ErrNotFound when there was none (or it had
// expired), so that of two concurrent takers exactly one gets it.
func (s *Store) TakeBotState(ctx context.Context, key string) (*BotState, error) {
	return scanBotState(s.Pool.QueryRow(ctx, `DELETE FROM bot_state WHERE key = $1 AND `+live+` RETURNING `+botStateColumns, key))
}

// ListBotState returns the unexpired values whose keys start with prefix, in key order.
func (s *Store) ListBotState(ctx context.Context, prefix string) ([]*BotState, error) {
	rows, err := s.Pool.Query(ctx, `SELECT `+botStateColumns+` FROM bot_state
		WHERE starts_with(key, $1) AND `+live+` ORDER BY key LIMIT 1000`, prefix)
	if err != nil {
		return nil, fmt.Errorf("list bot state: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*BotState, error) { return scanBotState(r) })
	if err != nil {
		return nil, fmt.Errorf("list bot state: %w", err)
	}
	return out, nil
}

// BotHealth is the bot's last report.
type BotHealth struct {
	LastReportTime time.Time
	LastPollTime   *time.Time
}

// ReportBotHealth records a report at the database's clock, which every replica shares.
func (s *Store) ReportBotHealth(ctx context.Context, lastPoll *time.Time) (*BotHealth, error) {
	var h BotHealth
	err := s.Pool.QueryRow(ctx, `
		INSERT INTO bot_health (id, last_report_time, last_poll_time) VALUES (1, now(), $1)
		ON CONFLICT (id) DO UPDATE SET last_report_time = now(), last_poll_time = excluded.last_poll_time
		RETURNING last_report_time, last_poll_time`, lastPoll).Scan(&h.LastReportTime, &h.LastPollTime)
	if err != nil {
		return nil, fmt.Errorf("report bot health: %w", err)
	}
	return &h, nil
}

// GetBotHealth reads the last report and the database's current time, so the age of the
// report is measured on one clock; ErrNotFound when the bot never reported.
func (s *Store) GetBotHealth(ctx context.Context) (*BotHealth, time.Time, error) {
	var h BotHealth
	var now time.Time
	err := s.Pool.QueryRow(ctx, `SELECT last_report_time, last_poll_time, now() FROM bot_health WHERE id = 1`).
		Scan(&h.LastReportTime, &h.LastPollTime, &now)
	if err != nil {
		return nil, time.Time{}, interpretError(err)
	}
	return &h, now, nil
}
