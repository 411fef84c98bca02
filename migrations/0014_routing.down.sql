DROP FUNCTION IF EXISTS gateway_settle(uuid, uuid[], text[], uuid[], text[], text[], text[], text[], bigint[], bigint[],
    bigint[], bigint[], bigint[], boolean[], numeric[], timestamptz[], timestamptz[], bigint[], bigint[], jsonb[]);
ALTER TABLE requests DROP COLUMN attempts;
ALTER TABLE model_routes DROP COLUMN weight, DROP COLUMN priority;
ALTER TABLE providers DROP COLUMN cooldown_ms, DROP COLUMN retry_backoff_ms, DROP COLUMN retry_attempts, DROP COLUMN api_key_pool;
