-- Issue 17: fewer round trips and less work per record on the ledger's hot path.
--
-- gateway_extend_lease, Store.ExtendLease in one round trip, was created here; its current
-- text is migrations/functions/gateway_extend_lease.sql, applied after the numbered migrations.

-- A charge's ledger entry has no idempotency key (credits and refunds do): a partial unique
-- index keeps the same guarantee without an index entry for every charge.
CREATE UNIQUE INDEX ledger_entries_idempotency_idx ON ledger_entries (profile_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_profile_id_idempotency_key_key;

