-- gateway_settle and gateway_extend_budget_lease need what this drops; the runner of an older
-- binary recreates gateway_settle from its own text.
DROP FUNCTION IF EXISTS gateway_settle(uuid, uuid[], text[], uuid[], text[], text[], text[], text[], bigint[], bigint[], bigint[], bigint[], bigint[], boolean[], numeric[], timestamptz[], timestamptz[], bigint[], bigint[]);
DROP FUNCTION IF EXISTS gateway_extend_budget_lease(uuid, uuid, timestamptz, numeric, numeric, interval);
DROP FUNCTION IF EXISTS gateway_budget_spent(uuid, text, timestamptz);
DROP FUNCTION IF EXISTS gateway_budget_window(text, timestamptz);
DROP TABLE key_budget_leases;
DROP TABLE key_spend;
ALTER TABLE api_keys DROP CONSTRAINT api_keys_budget_whole,
    DROP COLUMN budget_amount, DROP COLUMN budget_period, DROP COLUMN expire_time;
