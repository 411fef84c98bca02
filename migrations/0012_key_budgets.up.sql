-- Key budgets and expiry (issue 32). A budget caps what a key's charges may take in a UTC
-- calendar window (DAY, WEEK from Monday, MONTH) or over its life (TOTAL), enforced like the
-- balance: replicas lease slices of a key's window budget (key_budget_leases, the twin of
-- balance_leases) and hold requests against them in memory; gateway_settle takes the window's
-- spend and shrinks those leases in the same statement as the balance, and caps a charge at
-- what is free in the window, so that the charges of a window never exceed the budget.
ALTER TABLE api_keys
    ADD COLUMN budget_amount numeric(38,9) CHECK (budget_amount > 0),
    ADD COLUMN budget_period text CHECK (budget_period IN ('TOTAL', 'DAY', 'WEEK', 'MONTH')),
    ADD COLUMN expire_time   timestamptz,
    ADD CONSTRAINT api_keys_budget_whole CHECK ((budget_amount IS NULL) = (budget_period IS NULL));

-- What each key's charges took, per UTC day of the requests' start: the spend of any window
-- is a sum of at most 31 rows, and stays right when a budget is raised or given another
-- period mid-window. Kept by gateway_settle for keys with a budget (one upsert per key and day
-- in a settlement); a budget set on a key without one rebuilds the key's rows from its request
-- records (store.UpdateKey), so that it counts what the window already spent.
CREATE TABLE key_spend (
    key_id uuid NOT NULL,
    day    date NOT NULL,
    spent  numeric(38,9) NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, day)
);

INSERT INTO key_spend (key_id, day, spent)
SELECT r.key_id, (r.start_time AT TIME ZONE 'UTC')::date, sum(r.cost)
FROM requests r WHERE r.cost IS NOT NULL AND r.cost <> 0
GROUP BY 1, 2;

-- A replica's reservation of part of a key's budget in one window (window_start, UTC; TOTAL's
-- window starts at the epoch). The rules of balance_leases apply: version grows with every
-- write of any lease row (the same sequence), an expired lease counts for nothing.
CREATE TABLE key_budget_leases (
    key_id       uuid NOT NULL,
    replica_id   uuid NOT NULL,
    window_start timestamptz NOT NULL,
    amount       numeric(38,9) NOT NULL CHECK (amount >= 0),
    expires_at   timestamptz NOT NULL,
    version      bigint NOT NULL,
    PRIMARY KEY (key_id, window_start, replica_id)
);
CREATE INDEX key_budget_leases_replica_idx ON key_budget_leases (replica_id);

-- gateway_settle returns the budget leases too (a new result column): its text in
-- migrations/functions is applied after this, and CREATE OR REPLACE cannot change a result type.
DROP FUNCTION IF EXISTS gateway_settle(uuid, uuid[], text[], uuid[], text[], text[], text[], text[], bigint[], bigint[], bigint[], bigint[], bigint[], boolean[], numeric[], timestamptz[], timestamptz[], bigint[], bigint[]);
