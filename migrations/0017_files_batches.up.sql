-- Files and batches (contract.md "Files and batches"). A file's bytes live in chunks of at most
-- 1 MiB, written as an upload streams in and read back one chunk at a time, so no replica ever
-- holds a whole file. A batch copies its input lines into batch_items when it is created (the
-- input file may be deleted afterwards); each item is claimed, run and finished on its own row,
-- and the output and error files are read from the finished items, so they grow as items end.
CREATE TABLE batch_files (
    id          text PRIMARY KEY,
    profile_id  uuid NOT NULL REFERENCES profiles(id),
    filename    text NOT NULL,
    purpose     text NOT NULL,
    -- Uploaded files: their size. Output and error files (batch_id set) are read from their
    -- batch's items, and their size is counted there.
    bytes       bigint NOT NULL DEFAULT 0,
    batch_id    text,
    -- 'output' or 'error' for a batch's result files.
    result_kind text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz,
    deleted_at  timestamptz
);
CREATE INDEX batch_files_profile ON batch_files (profile_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX batch_files_expires ON batch_files (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE batch_file_chunks (
    file_id text NOT NULL REFERENCES batch_files(id) ON DELETE CASCADE,
    seq     int NOT NULL,
    data    bytea NOT NULL,
    PRIMARY KEY (file_id, seq)
);

CREATE TABLE batches (
    id                text PRIMARY KEY,
    profile_id        uuid NOT NULL REFERENCES profiles(id),
    -- The key that created the batch: every item runs with its checks.
    key_id            uuid NOT NULL REFERENCES api_keys(id),
    -- 'openai' (/v1/batches) or 'anthropic' (/v1/messages/batches): which shape it is shown in.
    api               text NOT NULL,
    endpoint          text NOT NULL,
    input_file_id     text,
    completion_window text NOT NULL,
    status            text NOT NULL,
    metadata          jsonb,
    errors            jsonb,
    total             int NOT NULL DEFAULT 0,
    completed         int NOT NULL DEFAULT 0,
    failed            int NOT NULL DEFAULT 0,
    canceled          int NOT NULL DEFAULT 0,
    expired           int NOT NULL DEFAULT 0,
    output_file_id    text,
    error_file_id     text,
    created_at        timestamptz NOT NULL DEFAULT now(),
    in_progress_at    timestamptz,
    finalizing_at     timestamptz,
    completed_at      timestamptz,
    failed_at         timestamptz,
    expired_at        timestamptz,
    cancelling_at     timestamptz,
    cancelled_at      timestamptz,
    -- The end of the completion window: items not finished by then end expired.
    expires_at        timestamptz NOT NULL,
    deleted_at        timestamptz
);
CREATE INDEX batches_profile ON batches (profile_id, api, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX batches_open ON batches (expires_at) WHERE status IN ('in_progress', 'cancelling');

CREATE TABLE batch_items (
    batch_id    text NOT NULL REFERENCES batches(id) ON DELETE CASCADE,
    idx         int NOT NULL,
    custom_id   text NOT NULL,
    model       text NOT NULL,
    body        bytea NOT NULL,
    -- pending → running (claimed; claimed_at) → done. A running item whose claim is older than
    -- the lease was left by a replica that died: it is claimed again, and runs again only if
    -- its request id has no charge.
    state       text NOT NULL DEFAULT 'pending',
    claimed_at  timestamptz,
    attempts    int NOT NULL DEFAULT 0,
    -- Set when done: 'response' (an upstream answer: output file), 'error' (a refusal: error
    -- file), 'canceled', 'expired'.
    outcome     text,
    status_code int,
    request_id  text,
    response    bytea,
    error_code  text,
    error_msg   text,
    finished_at timestamptz,
    PRIMARY KEY (batch_id, idx)
);
CREATE INDEX batch_items_open ON batch_items (claimed_at NULLS FIRST) WHERE state <> 'done';

-- A model's factor on its prices for batch items (catalog document's batch_price_factor).
ALTER TABLE models ADD COLUMN batch_price_factor numeric(38, 9) NOT NULL DEFAULT 1 CHECK (batch_price_factor >= 0);

-- A request record names its batch item through the item's request id (ListUsage).
CREATE INDEX batch_items_request ON batch_items (request_id) WHERE request_id IS NOT NULL;
