-- Issue 35: PostgreSQL CPU per charge.
--
-- Every charge inserts one ledger entry; each index on ledger_entries is an insertion (and a
-- write-ahead log record) per charge. The primary key on the serial id is read by nothing:
-- every lookup is by (profile_id, request_id) or (profile_id, idempotency_key), and the sums
-- by profile_id use the first. The id stays (a row's order of arrival), without its index.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_pkey;

-- A request's record goes into requests_profile_time_idx by its start time, which grows: in a
-- descending index every new entry lands on the profile's leftmost leaf, and a leaf split
-- there is an even split (only the rightmost leaf is split to leave it full), so the index
-- grew at half-full leaves, with a split (and its write-ahead log) every ~70 records of a
-- profile. Ascending, the newest entries land on the rightmost leaf, which is split 90/10.
-- The usage listing (ORDER BY start_time DESC, request_id DESC) reads it backwards, as
-- cheaply: a B-tree is scanned in either direction.
DROP INDEX requests_profile_time_idx;
CREATE INDEX requests_profile_time_idx ON requests (profile_id, start_time, request_id);
