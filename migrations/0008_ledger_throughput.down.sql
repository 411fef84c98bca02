-- Created after the numbered migrations (migrations/functions); absent when never applied.
DROP FUNCTION IF EXISTS gateway_extend_lease;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_profile_id_idempotency_key_key UNIQUE (profile_id, idempotency_key);
DROP INDEX ledger_entries_idempotency_idx;
