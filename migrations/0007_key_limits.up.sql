-- Per-key request limits (issue 16): at most max_concurrent requests in flight and
-- max_rps requests per second across all replicas; 0 means no limit.
ALTER TABLE api_keys
    ADD COLUMN max_concurrent integer NOT NULL DEFAULT 0 CHECK (max_concurrent >= 0),
    ADD COLUMN max_rps        integer NOT NULL DEFAULT 0 CHECK (max_rps >= 0);
