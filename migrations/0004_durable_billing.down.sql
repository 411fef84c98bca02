-- gateway_settle is created after the numbered migrations (migrations/functions); it needs
-- this migration's sequence and column, so it goes with them.
DROP FUNCTION IF EXISTS gateway_settle;
DROP INDEX requests_in_progress_idx;
ALTER TABLE requests DROP COLUMN replica_id;
DROP TABLE replicas;
DROP INDEX balance_leases_expiry_idx;
ALTER TABLE balance_leases DROP COLUMN version;
DROP SEQUENCE balance_lease_version;
