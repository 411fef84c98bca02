-- Issue 35: PostgreSQL CPU per charge.
--
-- A request's record goes into requests_profile_time_idx by its start time, which grows: in a
-- descending index every new entry lands on the profile's leftmost leaf, and a leaf split
-- there is an even split (only the rightmost leaf is split to leave it full), so the index
-- grew at half-full leaves, with a split (and its write-ahead log) every ~70 records of a
-- profile. Ascending, the newest entries land on the rightmost leaf, which is split 90/10.
-- The usage listing (ORDER BY start_time DESC, request_id DESC) reads it backwards, as
-- cheaply: a B-tree is scanned in either direction.
--
-- ledger_entries keeps its primary key, although no statement reads it (dropping it saved
-- 0.8-2.5 µs of ~45 per charge): an append-only ledger whose rows an operator cannot name
-- is not worth that.
DROP INDEX requests_profile_time_idx;
CREATE INDEX requests_profile_time_idx ON requests (profile_id, start_time, request_id);
