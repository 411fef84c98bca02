ALTER TABLE model_routes DROP COLUMN weight, DROP COLUMN priority;
ALTER TABLE providers DROP COLUMN cooldown_ms, DROP COLUMN retry_backoff_ms, DROP COLUMN retry_attempts, DROP COLUMN api_key_pool;
