-- Issue 13: money that survives faults.
--
-- Every write of a lease row takes a new number from one sequence, so that a replica, which
-- learns its lease from several concurrent transactions (growth, settlement, renewal), keeps
-- the newest state and never a stale, larger one.
CREATE SEQUENCE balance_lease_version;
ALTER TABLE balance_leases ADD COLUMN version bigint NOT NULL DEFAULT 0;
CREATE INDEX balance_leases_expiry_idx ON balance_leases (expires_at);

-- A replica reports here while it runs. A request record reserved before going upstream
-- (status in_progress) names its replica; when that replica stops reporting (killed), any
-- replica marks its unfinished records 'abandoned', so no record stays in_progress forever.
CREATE TABLE replicas (
    id      uuid PRIMARY KEY,
    seen_at timestamptz NOT NULL
);
ALTER TABLE requests ADD COLUMN replica_id uuid;
CREATE INDEX requests_in_progress_idx ON requests (replica_id) WHERE status = 'in_progress';

-- gateway_settle, which settles a batch of finished requests, was created here; its current
-- text is migrations/functions/gateway_settle.sql, applied after the numbered migrations
-- (the per-record loop first written here is core/store/testdata/gateway_settle_loop.sql).
