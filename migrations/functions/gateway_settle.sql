-- gateway_settle writes one batch of finished requests in one statement (one round trip, in
-- the statement's own transaction): the request records, one ledger entry per new charge,
-- the balances, and the replica's leases, which shrink by what was charged. The caller has
-- merged records that appear twice.
--
-- A charge already in the ledger (a replayed settlement) is not taken again. A withheld charge
-- (refunded before its commit arrived, see Store.Refund) is recorded 'unavailable' and not
-- taken. A fresh charge is capped at what is still free on its profile, free = max(balance -
-- other replicas' unexpired leases, 0), read after the profile lock, taken in record order:
-- usage above a hold never takes the balance below zero nor spends money another replica has
-- reserved. A charged record is final: a later uncharged settlement does not undo it.
--
-- Key budgets (migration 0012): a fresh charge of a key with a budget adds to its key's spend
-- of the UTC day its request started (key_spend), and is capped at what is free in the key's
-- window holding its start, free = max(budget - the window's spend - other replicas'
-- unexpired leases on that window, 0), taken in record order like the balance, so the charges
-- of a window never exceed the budget; and the replica's lease on that window shrinks by what
-- was charged. The profile lock covers all of it: a key belongs to one profile, and
-- gateway_extend_budget_lease takes the same lock. A key without a budget costs nothing here
-- beyond one look at api_keys per key of the batch: its key_spend is not kept, and a budget
-- set on it later rebuilds it from the request records under the same profile lock
-- (store.UpdateKey), so a settlement either sees the budget and counts its charge in key_spend
-- or has its records counted by that rebuild.
--
-- Rows returned: one per record (idx, what was charged or NULL, whether it was capped), then
-- one per charged profile with the replica's lease after the charges (present = false when
-- the replica has no lease row there; version is then one taken under the profile lock), then
-- one per charged budget window, its key in lease_profile and its start in lease_window.
--
-- Why it is written this way (PostgreSQL CPU per charge, issue 17; the measurements are in
-- migrations 0009 and 0010 and their commits): it is set-based, the batch read once, because
-- a per-record loop cost three executor rounds per charge; its plans are generic and use only
-- lookups by key, because per-batch planning cost as much as ten charges and a generic plan
-- made on small tables scanned the ledger. core/store's TestSettleAgreesWithTheLoopItReplaced
-- compares it with the per-record loop (core/store/testdata/gateway_settle_loop.sql).
--
-- It runs two statements, the profile lock and then everything else (issue 35): a settlement
-- costs about 600 µs of PostgreSQL CPU before its first record (executor start-up of each
-- statement, the call, the commit) and about 26 µs per record, so at the ~5-30 charges of a
-- group commit the fixed part is half the cost. Eight statements passing the batch between
-- them in arrays became two (BenchmarkSettleBatch at 27 charges, backend CPU per charge,
-- median of 12 interleaved rounds: 65.9 -> 46.6 µs). The second statement must start after
-- the lock is held, so that its snapshot sees the balance as the lock left it; its parts see
-- one snapshot and write different tables.
--
-- That statement has a second form without the key budgets' parts, for the batches none of
-- whose keys has a budget (a look at api_keys after the lock chooses): the budget parts (their
-- executor start-up, a second window's sort, their scans) cost ~160 µs of every settlement.
-- BenchmarkSettleAB at 27 charges, backend CPU per charge, median of 400 pairs, 3 runs:
-- -6.1, -6.5, -8.0 µs (of 46-56) with the look; -5.9, -6.0, -9.7 for the second form alone.
--
-- And that form has a plainer one still, for the batches that need none of its care: no key
-- with a budget, no charge replayed (already in the ledger), withheld (refunded before it
-- came) or negative, and every profile's charges together within what is free on it. Then every
-- charge is taken whole, in any order, so the statement needs no running sum (a window, its sort
-- and the materialised batch they feed) and no per-record lookups: the records go in as they
-- came. One statement after the lock looks for all of it (and for the budgets) at once, with
-- per-record lookups by the ledger's unique indexes (as scalar subqueries: an EXISTS under an OR
-- became a hashed subplan that read the whole index). A batch that fails the look takes the
-- capped form, which gives the same result wherever the plain one applies. BenchmarkSettleAB,
-- backend CPU per charge, median of 400 pairs, plain against the capped form alone: batches of
-- 27, -4.5 and -6.0 µs (of 39-57); of 16, -6.5 and -7.1 (of 54-57); of 4, -18 and -22 (of
-- 172-193). The function names the statement it runs at DEBUG (TestSettleAgreesWithTheLoopItReplaced
-- listens, to see each run and agree with the loop).
--
-- This file is the function's only text: store.Migrate applies it after the numbered
-- migrations whenever the database's definition differs (see migrations/embed.go).
CREATE OR REPLACE FUNCTION gateway_settle(
    p_replica uuid, p_profiles uuid[], p_ids text[], p_keys uuid[], p_models text[], p_families text[],
    p_statuses text[], p_currencies text[], p_in bigint[], p_cached bigint[], p_write bigint[], p_out bigint[],
    p_reason bigint[], p_reliable boolean[], p_costs numeric[], p_starts timestamptz[], p_ends timestamptz[],
    p_audio_in bigint[], p_audio_out bigint[], p_attempts jsonb[])
RETURNS TABLE (idx int, charged numeric, capped boolean, lease_profile uuid, lease_amount numeric, lease_version bigint, lease_present boolean, lease_window timestamptz)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan SET enable_seqscan = off SET enable_hashjoin = off SET enable_mergejoin = off
AS $$
DECLARE
    stamp bigint;
    locked bigint;      -- charged profiles locked (that exist)
    charging bigint;    -- charged profiles named
    budgeted boolean;   -- a key of the batch has a budget
    complex boolean;    -- a charge is replayed, withheld or negative, or a profile's charges exceed what is free
BEGIN
    -- Lock the charged profiles in id order (replicas settling together cannot deadlock), and
    -- count them against the profiles the charges name: one that was not locked does not
    -- exist (the foreign keys were dropped for speed, migration 0009).
    SELECT (SELECT count(*) FROM (SELECT 1 FROM profiles WHERE id = ANY (SELECT p FROM unnest(p_profiles, p_costs) t(p, c) WHERE c IS NOT NULL)
                                  ORDER BY id FOR UPDATE) l),
           (SELECT count(DISTINCT t.p) FROM unnest(p_profiles, p_costs) t(p, c) WHERE t.c IS NOT NULL)
    INTO locked, charging;
    IF locked <> charging THEN
        RAISE EXCEPTION 'charge for a profile that does not exist' USING ERRCODE = 'foreign_key_violation';
    END IF;
    stamp := nextval('balance_lease_version');

    -- Everything else in one statement, after the lock (its snapshot sees the balances as the
    -- lock left them): each statement of a settlement costs an executor start-up, which at a
    -- group of ~30 charges was as much as the charges' own work. Its parts see one snapshot
    -- and write different tables, so their order does not matter.
    --
    -- A batch none of whose keys has a budget (the usual case) runs the first or the second of
    -- the three statements below: the second is the third with every budget part taken out (bk
    -- empty: no window, no key_spend, no budget lease): an executor start-up grows with the
    -- plan, and those parts cost ~160 µs of every settlement (BenchmarkSettleAB, batches of 27:
    -- ~6 µs per charge of ~44); the first is the second without caps, replays or withheld
    -- charges (see the header). The look that chooses runs after the lock, so it sees every
    -- budget set before the settlement (setting one takes the key's profile lock first,
    -- store.UpdateKey, and cannot commit before this settlement does) and the balances and
    -- leases as they stay until the commit (a lease grows under the same profile lock).
    SELECT EXISTS (SELECT 1 FROM api_keys a WHERE a.id = ANY (p_keys) AND a.budget_amount IS NOT NULL),
           EXISTS (SELECT 1 FROM unnest(p_profiles, p_ids, p_costs) t(p, rid, c)
                   WHERE t.c IS NOT NULL AND (t.c < 0
                       OR (SELECT true FROM ledger_entries e WHERE e.profile_id = t.p AND e.request_id = t.rid)
                       OR (SELECT true FROM ledger_entries e WHERE e.profile_id = t.p AND e.idempotency_key = 'refund ' || t.rid)))
           OR EXISTS (SELECT 1 FROM (SELECT t.p, sum(t.c) AS a FROM unnest(p_profiles, p_costs) t(p, c) WHERE t.c IS NOT NULL GROUP BY t.p) s
                      JOIN profiles p ON p.id = s.p
                      WHERE p.balance - coalesce((SELECT sum(l.amount) FROM balance_leases l
                          WHERE l.profile_id = p.id AND l.replica_id <> p_replica AND l.expires_at > now()), 0) < s.a)
    INTO budgeted, complex;
    IF NOT budgeted AND NOT complex THEN
        RAISE DEBUG 'gateway_settle: plain';
        RETURN QUERY
        WITH rec AS (
            SELECT * FROM unnest(p_profiles, p_ids, p_keys, p_models, p_families, p_statuses, p_currencies, p_in, p_cached, p_write, p_out,
                        p_reason, p_reliable, p_costs, p_starts, p_ends, p_audio_in, p_audio_out, p_attempts)
                 WITH ORDINALITY AS t(p, rid, k, m, fam, st, cur, tin, tcached, twrite, tout, treason, reliable, cost, start, fin, ain, aout, att, i)
        ), entries AS (
            INSERT INTO ledger_entries (profile_id, amount, kind, reason, request_id)
            SELECT k.p, -k.cost, 'charge', k.m || ' ' || k.fam, k.rid FROM rec k WHERE k.cost IS NOT NULL
        ), records AS (
            INSERT INTO requests AS r (profile_id, request_id, key_id, model_id, endpoint_family, status, currency,
                input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
                usage_reliable, cost, start_time, end_time, audio_input_tokens, audio_output_tokens, attempts)
            SELECT k.p, k.rid, k.k, k.m, k.fam, k.st, k.cur,
                k.tin, k.tcached, k.twrite, k.tout, k.treason, k.reliable, k.cost, k.start, k.fin, k.ain, k.aout, k.att
            FROM rec k
            ON CONFLICT (profile_id, request_id) DO UPDATE SET
                status = excluded.status, input_tokens = excluded.input_tokens,
                cached_input_tokens = excluded.cached_input_tokens, cache_write_tokens = excluded.cache_write_tokens,
                output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
                usage_reliable = excluded.usage_reliable, cost = excluded.cost, end_time = excluded.end_time,
                audio_input_tokens = excluded.audio_input_tokens, audio_output_tokens = excluded.audio_output_tokens,
                attempts = excluded.attempts, replica_id = NULL
            WHERE r.cost IS NULL OR excluded.cost IS NOT NULL
        ), spent AS (
            SELECT k.p, sum(k.cost) AS a FROM rec k WHERE k.cost IS NOT NULL GROUP BY k.p
        ), balances AS (
            UPDATE profiles p SET balance = p.balance - s.a FROM spent s WHERE p.id = s.p
        ), lease AS (
            UPDATE balance_leases l SET amount = greatest(l.amount - s.a, 0), version = nextval('balance_lease_version')
            FROM spent s WHERE l.profile_id = s.p AND l.replica_id = p_replica
            RETURNING l.profile_id, l.amount, l.version
        )
        SELECT (k.i - 1)::int, k.cost, false, NULL::uuid, NULL::numeric, NULL::bigint, NULL::boolean, NULL::timestamptz
        FROM rec k
        UNION ALL
        SELECT NULL::int, NULL::numeric, NULL::boolean, s.p, coalesce(l.amount, 0), coalesce(l.version, stamp), l.profile_id IS NOT NULL, NULL::timestamptz
        FROM spent s LEFT JOIN lease l ON l.profile_id = s.p;
        RETURN;
    END IF;
    IF NOT budgeted THEN
        RAISE DEBUG 'gateway_settle: capped';
        RETURN QUERY
        WITH rec AS (
            SELECT t.*, o.prior, o.withheld,
                   coalesce(t.cost IS NOT NULL AND o.prior IS NULL AND NOT o.withheld, false) AS due
            FROM unnest(p_profiles, p_ids, p_keys, p_models, p_families, p_statuses, p_currencies, p_in, p_cached, p_write, p_out,
                        p_reason, p_reliable, p_costs, p_starts, p_ends, p_audio_in, p_audio_out, p_attempts)
                 WITH ORDINALITY AS t(p, rid, k, m, fam, st, cur, tin, tcached, twrite, tout, treason, reliable, cost, start, fin, ain, aout, att, i)
            LEFT JOIN LATERAL (
                SELECT (SELECT -e.amount FROM ledger_entries e WHERE e.profile_id = t.p AND e.request_id = t.rid) AS prior,
                       EXISTS (SELECT 1 FROM ledger_entries e WHERE e.profile_id = t.p AND e.idempotency_key = 'refund ' || t.rid) AS withheld
                WHERE t.cost IS NOT NULL) o ON true
        ), run AS (
            SELECT r.*, coalesce(sum(r.cost) FILTER (WHERE r.due) OVER (PARTITION BY r.p ORDER BY r.i ROWS UNBOUNDED PRECEDING), 0)
                - CASE WHEN r.due THEN r.cost ELSE 0 END AS before
            FROM rec r
        ), free AS (
            -- Every profile of the batch, not only those with a charge due: rec then has one
            -- reader, and is read in place rather than copied into a tuplestore first.
            SELECT p.id, greatest(p.balance - coalesce((SELECT sum(l.amount) FROM balance_leases l
                WHERE l.profile_id = p.id AND l.replica_id <> p_replica AND l.expires_at > now()), 0), 0) AS f
            FROM profiles p WHERE p.id = ANY (p_profiles)
        ), took AS MATERIALIZED (
            SELECT r.*,
                CASE WHEN r.due THEN least(r.cost, greatest(f.f - r.before, 0)) END AS take
            FROM run r LEFT JOIN free f ON r.due AND f.id = r.p
        ), entries AS (
            INSERT INTO ledger_entries (profile_id, amount, kind, reason, request_id)
            SELECT k.p, -k.take, 'charge', k.m || ' ' || k.fam, k.rid FROM took k WHERE k.take IS NOT NULL ORDER BY k.i
        ), records AS (
            INSERT INTO requests AS r (profile_id, request_id, key_id, model_id, endpoint_family, status, currency,
                input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
                usage_reliable, cost, start_time, end_time, audio_input_tokens, audio_output_tokens, attempts)
            SELECT k.p, k.rid, k.k, k.m, k.fam, CASE WHEN k.withheld AND k.prior IS NULL THEN 'unavailable' ELSE k.st END, k.cur,
                k.tin, k.tcached, k.twrite, k.tout, k.treason, k.reliable, coalesce(k.prior, k.take), k.start, k.fin, k.ain, k.aout, k.att
            FROM took k ORDER BY k.i
            ON CONFLICT (profile_id, request_id) DO UPDATE SET
                status = excluded.status, input_tokens = excluded.input_tokens,
                cached_input_tokens = excluded.cached_input_tokens, cache_write_tokens = excluded.cache_write_tokens,
                output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
                usage_reliable = excluded.usage_reliable, cost = excluded.cost, end_time = excluded.end_time,
                audio_input_tokens = excluded.audio_input_tokens, audio_output_tokens = excluded.audio_output_tokens,
                attempts = excluded.attempts, replica_id = NULL
            WHERE r.cost IS NULL OR excluded.cost IS NOT NULL
        ), spent AS (
            SELECT k.p, sum(k.take) AS a FROM took k WHERE k.take IS NOT NULL GROUP BY k.p
        ), balances AS (
            UPDATE profiles p SET balance = p.balance - s.a FROM spent s WHERE p.id = s.p
        ), lease AS (
            UPDATE balance_leases l SET amount = greatest(l.amount - s.a, 0), version = nextval('balance_lease_version')
            FROM spent s WHERE l.profile_id = s.p AND l.replica_id = p_replica
            RETURNING l.profile_id, l.amount, l.version
        )
        SELECT (k.i - 1)::int, coalesce(k.prior, k.take), coalesce(k.take < k.cost, false), NULL::uuid, NULL::numeric, NULL::bigint, NULL::boolean, NULL::timestamptz
        FROM took k
        UNION ALL
        SELECT NULL::int, NULL::numeric, NULL::boolean, s.p, coalesce(l.amount, 0), coalesce(l.version, stamp), l.profile_id IS NOT NULL, NULL::timestamptz
        FROM spent s LEFT JOIN lease l ON l.profile_id = s.p;
        RETURN;
    END IF;

    RAISE DEBUG 'gateway_settle: budgets';
    RETURN QUERY
    WITH bk AS MATERIALIZED (
        -- The batch's keys with a budget, each key looked up once (not once per record).
        SELECT a.id, a.budget_amount, a.budget_period FROM api_keys a
        WHERE a.id = ANY (p_keys) AND a.budget_amount IS NOT NULL
    ), rec AS (
        SELECT t.*, o.prior, o.withheld, b.budget, b.period, b.ws,
               coalesce(t.cost IS NOT NULL AND o.prior IS NULL AND NOT o.withheld, false) AS due
        FROM unnest(p_profiles, p_ids, p_keys, p_models, p_families, p_statuses, p_currencies, p_in, p_cached, p_write, p_out,
                    p_reason, p_reliable, p_costs, p_starts, p_ends, p_audio_in, p_audio_out, p_attempts)
             WITH ORDINALITY AS t(p, rid, k, m, fam, st, cur, tin, tcached, twrite, tout, treason, reliable, cost, start, fin, ain, aout, att, i)
        LEFT JOIN LATERAL (
            SELECT (SELECT -e.amount FROM ledger_entries e WHERE e.profile_id = t.p AND e.request_id = t.rid) AS prior,
                   EXISTS (SELECT 1 FROM ledger_entries e WHERE e.profile_id = t.p AND e.idempotency_key = 'refund ' || t.rid) AS withheld
            WHERE t.cost IS NOT NULL) o ON true
        LEFT JOIN LATERAL (
            SELECT bk.budget_amount AS budget, bk.budget_period AS period, gateway_budget_window(bk.budget_period, t.start) AS ws
            FROM bk WHERE t.cost IS NOT NULL AND bk.id = t.k) b ON true
    ), run AS (
        SELECT r.*, coalesce(sum(r.cost) FILTER (WHERE r.due) OVER (PARTITION BY r.p ORDER BY r.i ROWS UNBOUNDED PRECEDING), 0)
            - CASE WHEN r.due THEN r.cost ELSE 0 END AS before,
            coalesce(sum(r.cost) FILTER (WHERE r.due) OVER (PARTITION BY r.k, r.ws ORDER BY r.i ROWS UNBOUNDED PRECEDING), 0)
            - CASE WHEN r.due THEN r.cost ELSE 0 END AS kbefore
        FROM rec r
    ), free AS (
        SELECT p.id, greatest(p.balance - coalesce((SELECT sum(l.amount) FROM balance_leases l
            WHERE l.profile_id = p.id AND l.replica_id <> p_replica AND l.expires_at > now()), 0), 0) AS f
        FROM profiles p WHERE p.id = ANY (p_profiles)
    ), kfree AS (
        SELECT w.k, w.ws, greatest(w.budget - gateway_budget_spent(w.k, w.period, w.ws) - coalesce((SELECT sum(l.amount) FROM key_budget_leases l
            WHERE l.key_id = w.k AND l.window_start = w.ws AND l.replica_id <> p_replica AND l.expires_at > now()), 0), 0) AS f
        FROM (SELECT DISTINCT r.k, r.ws, r.budget, r.period FROM rec r WHERE r.due AND r.ws IS NOT NULL) w
    ), took AS MATERIALIZED (
        SELECT r.*,
            CASE WHEN r.due THEN least(r.cost, greatest(f.f - r.before, 0), CASE WHEN kf.f IS NULL THEN r.cost ELSE greatest(kf.f - r.kbefore, 0) END) END AS take
        FROM run r LEFT JOIN free f ON r.due AND f.id = r.p LEFT JOIN kfree kf ON r.due AND kf.k = r.k AND kf.ws = r.ws
    ), entries AS (
        INSERT INTO ledger_entries (profile_id, amount, kind, reason, request_id)
        SELECT k.p, -k.take, 'charge', k.m || ' ' || k.fam, k.rid FROM took k WHERE k.take IS NOT NULL ORDER BY k.i
    ), key_spent AS (
        INSERT INTO key_spend AS s (key_id, day, spent)
        SELECT k.k, (k.start AT TIME ZONE 'UTC')::date, sum(k.take)
        FROM took k WHERE k.take IS NOT NULL AND k.take <> 0 AND k.ws IS NOT NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (key_id, day) DO UPDATE SET spent = s.spent + excluded.spent
    ), records AS (
        INSERT INTO requests AS r (profile_id, request_id, key_id, model_id, endpoint_family, status, currency,
            input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
            usage_reliable, cost, start_time, end_time, audio_input_tokens, audio_output_tokens, attempts)
        SELECT k.p, k.rid, k.k, k.m, k.fam, CASE WHEN k.withheld AND k.prior IS NULL THEN 'unavailable' ELSE k.st END, k.cur,
            k.tin, k.tcached, k.twrite, k.tout, k.treason, k.reliable, coalesce(k.prior, k.take), k.start, k.fin, k.ain, k.aout, k.att
        FROM took k ORDER BY k.i
        ON CONFLICT (profile_id, request_id) DO UPDATE SET
            status = excluded.status, input_tokens = excluded.input_tokens,
            cached_input_tokens = excluded.cached_input_tokens, cache_write_tokens = excluded.cache_write_tokens,
            output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
            usage_reliable = excluded.usage_reliable, cost = excluded.cost, end_time = excluded.end_time,
            audio_input_tokens = excluded.audio_input_tokens, audio_output_tokens = excluded.audio_output_tokens,
            attempts = excluded.attempts, replica_id = NULL
        WHERE r.cost IS NULL OR excluded.cost IS NOT NULL
    ), spent AS (
        SELECT k.p, sum(k.take) AS a FROM took k WHERE k.take IS NOT NULL GROUP BY k.p
    ), balances AS (
        UPDATE profiles p SET balance = p.balance - s.a FROM spent s WHERE p.id = s.p
    ), lease AS (
        UPDATE balance_leases l SET amount = greatest(l.amount - s.a, 0), version = nextval('balance_lease_version')
        FROM spent s WHERE l.profile_id = s.p AND l.replica_id = p_replica
        RETURNING l.profile_id, l.amount, l.version
    ), kspent AS (
        SELECT k.k, k.ws, sum(k.take) AS a FROM took k WHERE k.take IS NOT NULL AND k.ws IS NOT NULL GROUP BY k.k, k.ws
    ), klease AS (
        UPDATE key_budget_leases l SET amount = greatest(l.amount - s.a, 0), version = nextval('balance_lease_version')
        FROM kspent s WHERE l.key_id = s.k AND l.window_start = s.ws AND l.replica_id = p_replica
        RETURNING l.key_id, l.window_start, l.amount, l.version
    )
    SELECT (k.i - 1)::int, coalesce(k.prior, k.take), coalesce(k.take < k.cost, false), NULL::uuid, NULL::numeric, NULL::bigint, NULL::boolean, NULL::timestamptz
    FROM took k
    UNION ALL
    SELECT NULL::int, NULL::numeric, NULL::boolean, s.p, coalesce(l.amount, 0), coalesce(l.version, stamp), l.profile_id IS NOT NULL, NULL::timestamptz
    FROM spent s LEFT JOIN lease l ON l.profile_id = s.p
    UNION ALL
    SELECT NULL::int, NULL::numeric, NULL::boolean, s.k, coalesce(l.amount, 0), coalesce(l.version, stamp), l.key_id IS NOT NULL, s.ws
    FROM kspent s LEFT JOIN klease l ON l.key_id = s.k AND l.window_start = s.ws;
END $$;
