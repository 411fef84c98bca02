-- The per-record gateway_settle of migration 0004 (issue 13), replaced by the set-based function
-- in migrations/functions/gateway_settle.sql; kept as the reference TestSettleAgreesWithTheLoopItReplaced
-- compares that function with.
-- (Dropped first: the current function's result has a column more, lease_window, which the
-- loop leaves NULL: it knows nothing of key budgets.)
DROP FUNCTION gateway_settle(uuid, uuid[], text[], uuid[], text[], text[], text[], text[], bigint[], bigint[], bigint[], bigint[], bigint[], boolean[], numeric[], timestamptz[], timestamptz[], bigint[], bigint[], jsonb[]);
CREATE OR REPLACE FUNCTION gateway_settle(
    p_replica uuid, p_profiles uuid[], p_ids text[], p_keys uuid[], p_models text[], p_families text[],
    p_statuses text[], p_currencies text[], p_in bigint[], p_cached bigint[], p_write bigint[], p_out bigint[],
    p_reason bigint[], p_reliable boolean[], p_costs numeric[], p_starts timestamptz[], p_ends timestamptz[],
    p_audio_in bigint[], p_audio_out bigint[], p_attempts jsonb[])
RETURNS TABLE (idx int, charged numeric, capped boolean, lease_profile uuid, lease_amount numeric, lease_version bigint, lease_present boolean, lease_window timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    n int := coalesce(array_length(p_ids, 1), 0);
    took numeric[] := '{}';
    st text[] := p_statuses;
    cut boolean[] := '{}';
    fp uuid[] := '{}';     -- charged profiles
    ff numeric[] := '{}';  -- what is still free for this replica's charges on each
    ft numeric[] := '{}';  -- what was taken from each
    j int;
    prior numeric;
    f numeric;
    take numeric;
    stamp bigint;
BEGIN
    PERFORM 1 FROM profiles
    WHERE id IN (SELECT p_profiles[i] FROM generate_series(1, n) i WHERE p_costs[i] IS NOT NULL)
    ORDER BY id FOR UPDATE;
    FOR i IN 1 .. n LOOP
        took[i] := NULL;
        cut[i] := false;
        CONTINUE WHEN p_costs[i] IS NULL;
        SELECT -e.amount INTO prior FROM ledger_entries e WHERE e.profile_id = p_profiles[i] AND e.request_id = p_ids[i];
        IF FOUND THEN
            took[i] := prior;
            CONTINUE;
        END IF;
        -- Withheld: the replica gave up on this charge and did not deliver the answer (see
        -- Store.Refund); a commit arriving late must not charge it.
        IF EXISTS (SELECT 1 FROM ledger_entries e WHERE e.profile_id = p_profiles[i] AND e.idempotency_key = 'refund ' || p_ids[i]) THEN
            st[i] := 'unavailable';
            CONTINUE;
        END IF;
        j := array_position(fp, p_profiles[i]);
        IF j IS NULL THEN
            SELECT p.balance - coalesce((SELECT sum(l.amount) FROM balance_leases l
                WHERE l.profile_id = p.id AND l.replica_id <> p_replica AND l.expires_at > now()), 0)
            INTO f FROM profiles p WHERE p.id = p_profiles[i];
            fp := fp || p_profiles[i];
            ff := ff || greatest(coalesce(f, 0), 0);
            ft := ft || 0::numeric;
            j := array_length(fp, 1);
        END IF;
        take := least(p_costs[i], ff[j]);
        cut[i] := take < p_costs[i];
        ff[j] := ff[j] - take;
        ft[j] := ft[j] + take;
        took[i] := take;
        INSERT INTO ledger_entries (profile_id, amount, kind, reason, request_id)
        VALUES (p_profiles[i], -take, 'charge', p_models[i] || ' ' || p_families[i], p_ids[i]);
    END LOOP;

    INSERT INTO requests AS r (profile_id, request_id, key_id, model_id, endpoint_family, status, currency,
        input_tokens, cached_input_tokens, cache_write_tokens, output_tokens, reasoning_tokens,
        usage_reliable, cost, start_time, end_time, audio_input_tokens, audio_output_tokens, attempts)
    SELECT * FROM unnest(p_profiles, p_ids, p_keys, p_models, p_families, st, p_currencies,
        p_in, p_cached, p_write, p_out, p_reason, p_reliable, took, p_starts, p_ends, p_audio_in, p_audio_out, p_attempts)
    ON CONFLICT (profile_id, request_id) DO UPDATE SET
        status = excluded.status, input_tokens = excluded.input_tokens,
        cached_input_tokens = excluded.cached_input_tokens, cache_write_tokens = excluded.cache_write_tokens,
        output_tokens = excluded.output_tokens, reasoning_tokens = excluded.reasoning_tokens,
        usage_reliable = excluded.usage_reliable, cost = excluded.cost, end_time = excluded.end_time,
        audio_input_tokens = excluded.audio_input_tokens, audio_output_tokens = excluded.audio_output_tokens,
        attempts = excluded.attempts, replica_id = NULL
    WHERE r.cost IS NULL OR excluded.cost IS NOT NULL;

    FOR i IN 1 .. n LOOP
        idx := i - 1; charged := took[i]; capped := cut[i];
        lease_profile := NULL; lease_amount := NULL; lease_version := NULL; lease_present := NULL;
        RETURN NEXT;
    END LOOP;
    IF coalesce(array_length(fp, 1), 0) = 0 THEN
        RETURN;
    END IF;
    UPDATE profiles p SET balance = p.balance - t.a FROM unnest(fp, ft) AS t(id, a) WHERE p.id = t.id;
    stamp := nextval('balance_lease_version');
    idx := NULL; charged := NULL; capped := NULL;
    FOR j IN 1 .. array_length(fp, 1) LOOP
        UPDATE balance_leases l SET amount = greatest(l.amount - ft[j], 0), version = nextval('balance_lease_version')
        WHERE l.profile_id = fp[j] AND l.replica_id = p_replica
        RETURNING l.amount, l.version INTO lease_amount, lease_version;
        lease_profile := fp[j];
        lease_present := FOUND;
        IF NOT FOUND THEN
            lease_amount := 0; lease_version := stamp;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
