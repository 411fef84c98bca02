-- gateway_extend_lease is Store.ExtendLease in one round trip (it was BEGIN, three statements
-- and COMMIT): under the profile lock, the free balance is the balance less the other
-- replicas' unexpired leases, read after the lock (a function's statements each take a fresh
-- snapshot, so a settlement that held the lock is seen); the replica's lease becomes
-- min(max(want, need), free), or nothing changes and no row is returned when need is not free.
--
-- This file is the function's only text: store.Migrate applies it after the numbered
-- migrations whenever the database's definition differs (see migrations/embed.go).
CREATE OR REPLACE FUNCTION gateway_extend_lease(p_profile uuid, p_replica uuid, p_need numeric, p_want numeric, p_ttl interval)
RETURNS TABLE (lease_amount numeric, lease_version bigint)
LANGUAGE plpgsql AS $$
DECLARE
    bal numeric;
    others numeric;
    amt numeric;
BEGIN
    SELECT p.balance INTO bal FROM profiles p WHERE p.id = p_profile FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'profile % not found', p_profile USING ERRCODE = 'no_data_found';
    END IF;
    SELECT coalesce(sum(l.amount), 0) INTO others FROM balance_leases l
    WHERE l.profile_id = p_profile AND l.replica_id <> p_replica AND l.expires_at > now();
    IF bal - others < p_need THEN
        RETURN;
    END IF;
    amt := least(greatest(p_want, p_need), bal - others);
    RETURN QUERY
    INSERT INTO balance_leases AS l (profile_id, replica_id, amount, expires_at, version)
    VALUES (p_profile, p_replica, amt, now() + p_ttl, nextval('balance_lease_version'))
    ON CONFLICT (profile_id, replica_id) DO UPDATE
    SET amount = excluded.amount, expires_at = excluded.expires_at, version = excluded.version
    RETURNING l.amount, l.version;
END $$;
