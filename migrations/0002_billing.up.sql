-- A lease reserves part of a profile's balance for one gateway replica, which then takes holds
-- against it in memory. Free balance = balance - sum(unexpired leases of all replicas). A
-- replica renews its leases while it uses them and deletes them when idle; a crashed
-- replica's leases stop counting when they expire.
CREATE TABLE balance_leases (
    profile_id uuid NOT NULL REFERENCES profiles(id),
    replica_id uuid NOT NULL,
    amount     numeric(38,9) NOT NULL CHECK (amount >= 0),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (profile_id, replica_id)
);
