package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// StatusMinute is what one replica saw of one status component in one minute.
type StatusMinute struct {
	Component  string
	Minute     time.Time
	OK, Failed int64
	// Latency counts requests per histogram bucket (bounds in core/statusdata).
	Latency []int64
}

// ModelMinute is what one replica saw of one (model, endpoint family) in one minute;
// LastSuccess is the end of the latest success among them (zero when none).
type ModelMinute struct {
	Model, EndpointFamily string
	Minute                time.Time
	OK, Failed            int64
	LastSuccess           time.Time
}

// StatusRetention is how long the per-minute rows are kept; the daily roll-ups stay.
const StatusRetention = 48 * time.Hour

// AddStatus adds a replica's counts to the shared rows in one transaction: the minutes, their
// daily roll-ups, the model minutes and the last successes. Counts are added, never replaced,
// so replicas flushing at once sum up; minutes older than StatusRetention are pruned.
func (s *Store) AddStatus(ctx context.Context, comps []StatusMinute, models []ModelMinute) error {
	b := &pgx.Batch{}
	for _, c := range comps {
		b.Queue(`INSERT INTO status_minutes (component, minute, ok, failed, latency) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (component, minute) DO UPDATE SET
			  ok = status_minutes.ok + EXCLUDED.ok, failed = status_minutes.failed + EXCLUDED.failed,
			  latency = ARRAY(SELECT coalesce(a, 0) + coalesce(b, 0)
			                  FROM unnest(status_minutes.latency, EXCLUDED.latency) WITH ORDINALITY AS t(a, b, i) ORDER BY i)`,
			c.Component, c.Minute, c.OK, c.Failed, c.Latency)
		b.Queue(`INSERT INTO status_days (component, day, ok, failed) VALUES ($1, $2, $3, $4)
			ON CONFLICT (component, day) DO UPDATE SET ok = status_days.ok + EXCLUDED.ok, failed = status_days.failed + EXCLUDED.failed`,
			c.Component, c.Minute.UTC().Format(time.DateOnly), c.OK, c.Failed)
	}
	for _, m := range models {
		b.Queue(`INSERT INTO status_model_minutes (model, endpoint_family, minute, ok, failed) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (model, endpoint_family, minute) DO UPDATE SET
			  ok = status_model_minutes.ok + EXCLUDED.ok, failed = status_model_minutes.failed + EXCLUDED.failed`,
			m.Model, m.EndpointFamily, m.Minute, m.OK, m.Failed)
		if !m.LastSuccess.IsZero() {
			b.Queue(`INSERT INTO status_model_success (model, endpoint_family, last_success_at) VALUES ($1, $2, $3)
				ON CONFLICT (model, endpoint_family) DO UPDATE SET
				  last_success_at = greatest(status_model_success.last_success_at, EXCLUDED.last_success_at)`,
				m.Model, m.EndpointFamily, m.LastSuccess)
		}
	}
	if b.Len() == 0 {
		return nil
	}
	b.Queue(`DELETE FROM status_minutes WHERE minute < now() - $1::interval`, StatusRetention)
	b.Queue(`DELETE FROM status_model_minutes WHERE minute < now() - $1::interval`, StatusRetention)
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
	if err != nil {
		return fmt.Errorf("add status counts: %w", err)
	}
	return nil
}

// StatusMinutes are the component minutes after since, in no particular order.
func (s *Store) StatusMinutes(ctx context.Context, since time.Time) ([]StatusMinute, error) {
	rows, err := s.Pool.Query(ctx, `SELECT component, minute, ok, failed, latency FROM status_minutes WHERE minute > $1`, since)
	if err != nil {
		return nil, fmt.Errorf("status minutes: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StatusMinute, error) {
		var m StatusMinute
		return m, r.Scan(&m.Component, &m.Minute, &m.OK, &m.Failed, &m.Latency)
	})
}

// StatusDay is a daily roll-up of one component.
type StatusDay struct {
	Component  string
	Day        time.Time
	OK, Failed int64
}

// StatusDays are the daily roll-ups from the day of since on.
func (s *Store) StatusDays(ctx context.Context, since time.Time) ([]StatusDay, error) {
	rows, err := s.Pool.Query(ctx, `SELECT component, day, ok, failed FROM status_days WHERE day >= $1::date`, since.UTC().Format(time.DateOnly))
	if err != nil {
		return nil, fmt.Errorf("status days: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StatusDay, error) {
		var d StatusDay
		return d, r.Scan(&d.Component, &d.Day, &d.OK, &d.Failed)
	})
}

// ModelStatus sums a (model, endpoint family)'s minutes after since, with its last success
// ever (zero when none).
type ModelStatus struct {
	Model, EndpointFamily string
	OK, Failed            int64
	LastSuccess           time.Time
}

// ModelStatuses lists every pair with minutes after since or a recorded success.
func (s *Store) ModelStatuses(ctx context.Context, since time.Time) ([]ModelStatus, error) {
	rows, err := s.Pool.Query(ctx, `
		SELECT coalesce(w.model, l.model), coalesce(w.endpoint_family, l.endpoint_family),
		       coalesce(w.ok, 0), coalesce(w.failed, 0), l.last_success_at
		FROM (SELECT model, endpoint_family, sum(ok)::bigint AS ok, sum(failed)::bigint AS failed
		      FROM status_model_minutes WHERE minute > $1 GROUP BY model, endpoint_family) w
		FULL JOIN status_model_success l USING (model, endpoint_family)`, since)
	if err != nil {
		return nil, fmt.Errorf("model statuses: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ModelStatus, error) {
		var m ModelStatus
		var last *time.Time
		err := r.Scan(&m.Model, &m.EndpointFamily, &m.OK, &m.Failed, &last)
		if last != nil {
			m.LastSuccess = *last
		}
		return m, err
	})
}

// TakeLease gives the named lease to holder for ttl when it is free, expired, or already
// the holder's (which renews it); it reports whether holder now has it.
func (s *Store) TakeLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	var got string
	err := s.Pool.QueryRow(ctx, `
		INSERT INTO status_leases (name, holder, expires_at) VALUES ($1, $2, now() + $3::interval)
		ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
		WHERE status_leases.expires_at < now() OR status_leases.holder = EXCLUDED.holder
		RETURNING holder`, name, holder, ttl).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("take lease %s: %w", name, err)
	}
	return got == holder, nil
}

// Incident is an operator's incident or maintenance note with its updates, newest first.
type Incident struct {
	ID                           uuid.UUID
	Kind, Title, Status, Impact  string
	Components                   []string
	ScheduledFor, ScheduledUntil *time.Time
	CreateTime, UpdateTime       time.Time
	ResolveTime                  *time.Time
	Updates                      []IncidentUpdate
}

// IncidentUpdate is one status change with its text.
type IncidentUpdate struct {
	ID           uuid.UUID
	Status, Body string
	CreateTime   time.Time
}

// CreateIncident stores an incident and its first update.
func (s *Store) CreateIncident(ctx context.Context, in *Incident, body string) (*Incident, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO status_incidents (id, kind, title, status, impact, components, scheduled_for, scheduled_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, id, in.Kind, in.Title, in.Status, in.Impact, in.Components, in.ScheduledFor, in.ScheduledUntil); err != nil {
			return err
		}
		return addUpdate(ctx, tx, id, in.Status, body)
	})
	if err != nil {
		return nil, fmt.Errorf("create incident: %w", interpretError(err))
	}
	return s.GetIncident(ctx, id)
}

// UpdateIncident appends an update; a non-empty impact replaces the incident's; resolved
// marks it resolved. ErrNotFound when there is no such incident.
func (s *Store) UpdateIncident(ctx context.Context, id uuid.UUID, status, body, impact string, resolved bool) (*Incident, error) {
	err := pgx.BeginFunc(ctx, s.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE status_incidents SET status = $2, impact = coalesce(nullif($3, ''), impact), update_time = now(),
			resolve_time = CASE WHEN $4 THEN coalesce(resolve_time, now()) ELSE NULL END WHERE id = $1`, id, status, impact, resolved)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ErrNotFound
		}
		return addUpdate(ctx, tx, id, status, body)
	})
	if err != nil {
		return nil, fmt.Errorf("update incident: %w", interpretError(err))
	}
	return s.GetIncident(ctx, id)
}

func addUpdate(ctx context.Context, tx pgx.Tx, incident uuid.UUID, status, body string) error {
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO status_incident_updates (id, incident_id, status, body) VALUES ($1, $2, $3, $4)`, id, incident, status, body)
	return err
}

// GetIncident reads one incident with its updates.
func (s *Store) GetIncident(ctx context.Context, id uuid.UUID) (*Incident, error) {
	list, err := s.incidents(ctx, `WHERE id = $1`, id)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, ErrNotFound
	}
	return list[0], nil
}

// ListIncidents lists open incidents and maintenance, and those resolved after resolvedSince
// (none when it is zero), newest first.
func (s *Store) ListIncidents(ctx context.Context, resolvedSince time.Time) ([]*Incident, error) {
	if resolvedSince.IsZero() {
		return s.incidents(ctx, `WHERE resolve_time IS NULL`)
	}
	return s.incidents(ctx, `WHERE resolve_time IS NULL OR resolve_time > $1`, resolvedSince)
}

func (s *Store) incidents(ctx context.Context, where string, args ...any) ([]*Incident, error) {
	rows, err := s.Pool.Query(ctx, `SELECT id, kind, title, status, impact, components, scheduled_for, scheduled_until,
		create_time, update_time, resolve_time FROM status_incidents `+where+` ORDER BY create_time DESC, id DESC LIMIT 100`, args...)
	if err != nil {
		return nil, fmt.Errorf("list incidents: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Incident, error) {
		in := &Incident{}
		return in, r.Scan(&in.ID, &in.Kind, &in.Title, &in.Status, &in.Impact, &in.Components, &in.ScheduledFor,
			&in.ScheduledUntil, &in.CreateTime, &in.UpdateTime, &in.ResolveTime)
	})
	if err != nil || len(list) == 0 {
		return list, err
	}
	byID := map[uuid.UUID]*Incident{}
	ids := make([]uuid.UUID, len(list))
	for i, in := range list {
		byID[in.ID], ids[i] = in, in.ID
	}
	rows, err = s.Pool.Query(ctx, `SELECT incident_id, id, status, body, create_time FROM status_incident_updates
		WHERE incident_id = ANY($1) ORDER BY create_time DESC, id DESC`, ids)
	if err != nil {
		return nil, fmt.Errorf("list incident updates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var inc uuid.UUID
		var u IncidentUpdate
		if err := rows.Scan(&inc, &u.ID, &u.Status, &u.Body, &u.CreateTime); err != nil {
			return nil, err
		}
		byID[inc].Updates = append(byID[inc].Updates, u)
	}
	return list, rows.Err()
}
