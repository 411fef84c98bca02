-- The chat bot holds no database connection; what it must remember across restarts (the last
-- handled update id, pending confirmations, scheduled deletions of secret messages) lives
-- here, written through the admin API. Values are opaque to the gateway.
CREATE TABLE bot_state (
    key         text PRIMARY KEY,
    value       text NOT NULL,
    expire_time timestamptz,
    update_time timestamptz NOT NULL DEFAULT now()
);

-- One row: when the bot last reported that it polls Telegram successfully. The status site
-- shows the bot operational while reports arrive.
CREATE TABLE bot_health (
    id               smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    last_report_time timestamptz NOT NULL,
    last_poll_time   timestamptz
);
