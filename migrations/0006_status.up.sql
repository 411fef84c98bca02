-- The public status site (contract.md, "Status site and docs"). Every replica adds what it
-- saw to per-minute rows, so every replica reads the same numbers back. Latency is a fixed
-- histogram (bucket bounds in core/statusdata) whose counts are added element by element.
CREATE TABLE status_minutes (
    component text        NOT NULL,
    minute    timestamptz NOT NULL,
    ok        bigint      NOT NULL DEFAULT 0,
    failed    bigint      NOT NULL DEFAULT 0,
    latency   bigint[]    NOT NULL,
    PRIMARY KEY (component, minute)
);
CREATE INDEX status_minutes_minute ON status_minutes (minute);

-- Daily roll-ups behind the 90-day history bars; kept when the minutes are pruned.
CREATE TABLE status_days (
    component text   NOT NULL,
    day       date   NOT NULL,
    ok        bigint NOT NULL DEFAULT 0,
    failed    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (component, day)
);

-- The model compatibility matrix: outcomes per (model, endpoint family) and minute, from
-- live traffic and from the synthetic probe.
CREATE TABLE status_model_minutes (
    model           text        NOT NULL,
    endpoint_family text        NOT NULL,
    minute          timestamptz NOT NULL,
    ok              bigint      NOT NULL DEFAULT 0,
    failed          bigint      NOT NULL DEFAULT 0,
    PRIMARY KEY (model, endpoint_family, minute)
);
CREATE INDEX status_model_minutes_minute ON status_model_minutes (minute);

CREATE TABLE status_model_success (
    model           text        NOT NULL,
    endpoint_family text        NOT NULL,
    last_success_at timestamptz NOT NULL,
    PRIMARY KEY (model, endpoint_family)
);

-- Incidents and maintenance notes, written by an operator through the admin API.
CREATE TABLE status_incidents (
    id              uuid        PRIMARY KEY,
    kind            text        NOT NULL CHECK (kind IN ('incident', 'maintenance')),
    title           text        NOT NULL,
    status          text        NOT NULL,
    impact          text        NOT NULL CHECK (impact IN ('none', 'minor', 'major', 'critical')),
    components      text[]      NOT NULL DEFAULT '{}',
    scheduled_for   timestamptz,
    scheduled_until timestamptz,
    create_time     timestamptz NOT NULL DEFAULT now(),
    update_time     timestamptz NOT NULL DEFAULT now(),
    resolve_time    timestamptz
);
CREATE INDEX status_incidents_open ON status_incidents (create_time) WHERE resolve_time IS NULL;

CREATE TABLE status_incident_updates (
    id          uuid        PRIMARY KEY,
    incident_id uuid        NOT NULL REFERENCES status_incidents(id) ON DELETE CASCADE,
    status      text        NOT NULL,
    body        text        NOT NULL,
    create_time timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX status_incident_updates_incident ON status_incident_updates (incident_id, create_time);

-- Leases that let one replica at a time run a job (the synthetic probe).
CREATE TABLE status_leases (
    name       text        PRIMARY KEY,
    holder     text        NOT NULL,
    expires_at timestamptz NOT NULL
);
