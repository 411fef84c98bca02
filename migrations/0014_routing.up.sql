-- Routing that survives providers (contract.md, "Routing: balanced routes, credential pools,
-- retries, cooldown, affinity"). Every column is optional, so that a catalogue applied before
-- this migration means what it meant: one credential, one attempt per route, the default
-- cooldown, routes in fallback order (priority NULL = the route's position), weight 1.
ALTER TABLE providers
    ADD COLUMN api_key_pool text[],
    ADD COLUMN retry_attempts integer,
    ADD COLUMN retry_backoff_ms bigint,
    ADD COLUMN cooldown_ms bigint;
ALTER TABLE model_routes
    ADD COLUMN priority integer,
    ADD COLUMN weight integer NOT NULL DEFAULT 1;
