-- gateway_extend_budget_lease is gateway_extend_lease for a key's budget in one window (one
-- round trip): under the lock of the key's profile (which serialises it with settlements and
-- balance leases, see gateway_settle), what is free in the window is the budget less the
-- window's spend less the other replicas' unexpired leases on the same window; the replica's
-- lease becomes min(max(want, need), free). One row is returned in any case: lease_amount is
-- NULL when need is not free (nothing changes), and budget, spent and others (the other
-- replicas' leases) say why, for the refusal's message. A key without a budget now (removed since the replica read it) gets
-- what it wants: nothing caps its charges in gateway_settle either.
--
-- This file is the function's only text: store.Migrate applies it after the numbered
-- migrations whenever the database's definition differs (see migrations/embed.go).
CREATE OR REPLACE FUNCTION gateway_extend_budget_lease(p_key uuid, p_replica uuid, p_window timestamptz, p_need numeric, p_want numeric, p_ttl interval)
RETURNS TABLE (lease_amount numeric, lease_version bigint, budget numeric, spent numeric, others numeric)
LANGUAGE plpgsql AS $$
DECLARE
    v_prof uuid;
    v_budget numeric;
    v_period text;
    v_used numeric;
    v_others numeric;
    v_free numeric;
BEGIN
    SELECT k.profile_id INTO v_prof FROM api_keys k WHERE k.id = p_key;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'key % not found', p_key USING ERRCODE = 'no_data_found';
    END IF;
    PERFORM 1 FROM profiles p WHERE p.id = v_prof FOR UPDATE;
    -- Read after the lock: a settlement or an UpdateKey that committed meanwhile is seen.
    SELECT k.budget_amount, k.budget_period INTO v_budget, v_period FROM api_keys k WHERE k.id = p_key;
    IF v_budget IS NULL THEN
        v_free := greatest(p_want, p_need);
        v_used := 0;
        v_others := 0;
    ELSE
        v_used := gateway_budget_spent(p_key, v_period, gateway_budget_window(v_period, p_window));
        SELECT coalesce(sum(l.amount), 0) INTO v_others FROM key_budget_leases l
        WHERE l.key_id = p_key AND l.window_start = p_window AND l.replica_id <> p_replica AND l.expires_at > now();
        v_free := v_budget - v_used - v_others;
        IF v_free < p_need THEN
            RETURN QUERY SELECT NULL::numeric, NULL::bigint, v_budget, v_used, v_others;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY
    INSERT INTO key_budget_leases AS l (key_id, replica_id, window_start, amount, expires_at, version)
    VALUES (p_key, p_replica, p_window, least(greatest(p_want, p_need), v_free), now() + p_ttl, nextval('balance_lease_version'))
    ON CONFLICT (key_id, window_start, replica_id) DO UPDATE
    SET amount = excluded.amount, expires_at = excluded.expires_at, version = excluded.version
    RETURNING l.amount, l.version, v_budget, v_used, v_others;
END $$;
