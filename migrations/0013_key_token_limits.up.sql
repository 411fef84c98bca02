-- Per-key token limit (issue 32): at most max_tpm input + output tokens per rolling minute
-- across all replicas; 0 means no limit.
ALTER TABLE api_keys
    ADD COLUMN max_tpm integer NOT NULL DEFAULT 0 CHECK (max_tpm >= 0);
