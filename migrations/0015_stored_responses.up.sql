-- Stored responses (contract.md "Stored responses"): a response object kept for
-- GATEWAY_RESPONSES_TTL so that previous_response_id can continue it and the GET/DELETE
-- routes can read it. A row holds its response once and only its own input items; a
-- conversation is the chain of rows through previous_id, read with one recursive query, so
-- no turn copies the turns before it.
CREATE TABLE stored_responses (
    id          text PRIMARY KEY,
    profile_id  uuid NOT NULL REFERENCES profiles(id),
    -- No foreign key: rows are purged in batches, and a continued row outlives its TTL only
    -- as long as a later row names it (see the purge in core/store/responses.go).
    previous_id text,
    response    jsonb NOT NULL,
    input_items jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    deleted_at  timestamptz
);

-- The purge finds what is due, and whether a row is still continued by another.
CREATE INDEX stored_responses_expires ON stored_responses (expires_at);
CREATE INDEX stored_responses_deleted ON stored_responses (deleted_at) WHERE deleted_at IS NOT NULL;
CREATE INDEX stored_responses_previous ON stored_responses (previous_id) WHERE previous_id IS NOT NULL;
