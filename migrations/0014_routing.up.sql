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

-- Every upstream attempt of a request, in order: [{provider, upstream_model, status,
-- error_code, duration_ms}] (NULL for records written before, and for requests reserved but
-- not yet settled). gateway_settle takes them as a 20th argument: its 19-argument form goes.
ALTER TABLE requests ADD COLUMN attempts jsonb;
DROP FUNCTION IF EXISTS gateway_settle(uuid, uuid[], text[], uuid[], text[], text[], text[], text[], bigint[], bigint[],
    bigint[], bigint[], bigint[], boolean[], numeric[], timestamptz[], timestamptz[], bigint[], bigint[]);
