-- Money columns are numeric(38,9): exact to 9 fractional digits and far beyond 10^15.

CREATE TABLE settings (
    key   text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO settings (key, value) VALUES ('currency', 'RUB');

CREATE TABLE profiles (
    id           uuid PRIMARY KEY,
    display_name text NOT NULL DEFAULT '',
    external_ref text UNIQUE,
    currency     text NOT NULL,
    -- Denormalised sum of ledger_entries.amount, maintained in the same transaction as every
    -- entry; the invariant balance = sum(entries) is checked by tests.
    balance      numeric(38,9) NOT NULL DEFAULT 0,
    create_time  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
    id                uuid PRIMARY KEY,
    profile_id        uuid NOT NULL REFERENCES profiles(id),
    name              text NOT NULL DEFAULT '',
    prefix            text NOT NULL,
    secret_hash       bytea NOT NULL UNIQUE,       -- SHA-256 of the secret; the secret itself is never stored
    allowed_endpoints text[] NOT NULL DEFAULT '{}',
    allowed_models    text[] NOT NULL DEFAULT '{}',
    state             text NOT NULL DEFAULT 'ACTIVE' CHECK (state IN ('ACTIVE', 'REVOKED')),
    create_time       timestamptz NOT NULL DEFAULT now(),
    revoke_time       timestamptz,
    replaced_by       uuid REFERENCES api_keys(id)
);
CREATE INDEX api_keys_profile_idx ON api_keys (profile_id, create_time);

CREATE TABLE families (
    id       text PRIMARY KEY,
    position integer NOT NULL,
    active   boolean NOT NULL DEFAULT true
);

CREATE TABLE providers (
    id                    text PRIMARY KEY,
    kind                  text NOT NULL,
    base_url              text NOT NULL,
    api_key_env           text NOT NULL DEFAULT '',
    first_byte_timeout_ms bigint,
    idle_timeout_ms       bigint,
    active                boolean NOT NULL DEFAULT true
);

CREATE TABLE models (
    id                 text PRIMARY KEY,
    display_name       text NOT NULL DEFAULT '',
    family_id          text NOT NULL REFERENCES families(id),
    owned_by           text NOT NULL DEFAULT '',
    priority           integer NOT NULL DEFAULT 0,
    active             boolean NOT NULL DEFAULT true,
    output_token_limit integer,
    streaming          boolean NOT NULL DEFAULT true,
    create_time        timestamptz NOT NULL DEFAULT now()
);

-- Ordered upstreams per (model, endpoint families): position is the fallback order.
CREATE TABLE model_routes (
    model_id          text NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    position          integer NOT NULL,
    endpoint_families text[] NOT NULL,
    provider_id       text NOT NULL REFERENCES providers(id),
    upstream_model    text NOT NULL,
    PRIMARY KEY (model_id, position)
);

-- One row per price set; a set may cover several endpoint families.
CREATE TABLE prices (
    model_id          text NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    position          integer NOT NULL,
    endpoint_families text[] NOT NULL,
    billing_mode      text NOT NULL CHECK (billing_mode IN ('per_token', 'per_request')),
    -- per 1M tokens, in the billing currency; NULL = not priced
    input             numeric(38,9),
    cached_input      numeric(38,9),
    cache_write       numeric(38,9),
    output            numeric(38,9),
    -- per request, in the billing currency
    request           numeric(38,9),
    active            boolean NOT NULL DEFAULT true,
    PRIMARY KEY (model_id, position)
);

CREATE TABLE capabilities (
    model_id            text NOT NULL REFERENCES models(id) ON DELETE CASCADE,
    endpoint_family     text NOT NULL,
    optional_parameters text[] NOT NULL,
    verified_at         timestamptz NOT NULL,
    PRIMARY KEY (model_id, endpoint_family)
);

-- Units of the quoted currency per 1 unit of the billing currency.
CREATE TABLE fx_snapshots (
    id             bigserial PRIMARY KEY,
    effective_date date NOT NULL,
    fetched_at     timestamptz NOT NULL,
    rates          jsonb NOT NULL,
    create_time    timestamptz NOT NULL DEFAULT now()
);

-- Append-only. Credits are positive, charges negative.
CREATE TABLE ledger_entries (
    id              bigserial PRIMARY KEY,
    profile_id      uuid NOT NULL REFERENCES profiles(id),
    amount          numeric(38,9) NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('credit', 'charge', 'adjustment')),
    reason          text NOT NULL DEFAULT '',
    idempotency_key text,
    request_id      text,
    create_time     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (profile_id, idempotency_key),
    UNIQUE (profile_id, request_id)
);

-- One row per request that passed the key checks; (profile_id, request_id) is what makes a
-- client-chosen x-request-id single-use.
CREATE TABLE requests (
    profile_id          uuid NOT NULL REFERENCES profiles(id),
    request_id          text NOT NULL,
    key_id              uuid NOT NULL REFERENCES api_keys(id),
    model_id            text NOT NULL,
    endpoint_family     text NOT NULL,
    status              text NOT NULL,
    input_tokens        bigint NOT NULL DEFAULT 0,
    cached_input_tokens bigint NOT NULL DEFAULT 0,
    cache_write_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens       bigint NOT NULL DEFAULT 0,
    reasoning_tokens    bigint NOT NULL DEFAULT 0,
    usage_reliable      boolean NOT NULL DEFAULT false,
    cost                numeric(38,9),
    currency            text NOT NULL,
    start_time          timestamptz NOT NULL DEFAULT now(),
    end_time            timestamptz,
    PRIMARY KEY (profile_id, request_id)
);
CREATE INDEX requests_profile_time_idx ON requests (profile_id, start_time DESC, request_id DESC);

-- Every change that the in-memory snapshot depends on wakes all replicas.
CREATE FUNCTION notify_snapshot() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('gateway_snapshot', TG_TABLE_NAME);
    RETURN NULL;
END $$;

CREATE TRIGGER api_keys_notify AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER families_notify AFTER INSERT OR UPDATE OR DELETE ON families FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER providers_notify AFTER INSERT OR UPDATE OR DELETE ON providers FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER models_notify AFTER INSERT OR UPDATE OR DELETE ON models FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER model_routes_notify AFTER INSERT OR UPDATE OR DELETE ON model_routes FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER prices_notify AFTER INSERT OR UPDATE OR DELETE ON prices FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER capabilities_notify AFTER INSERT OR UPDATE OR DELETE ON capabilities FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER fx_snapshots_notify AFTER INSERT OR UPDATE OR DELETE ON fx_snapshots FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
CREATE TRIGGER settings_notify AFTER INSERT OR UPDATE OR DELETE ON settings FOR EACH STATEMENT EXECUTE FUNCTION notify_snapshot();
