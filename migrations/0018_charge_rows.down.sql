DROP INDEX requests_profile_time_idx;
CREATE INDEX requests_profile_time_idx ON requests (profile_id, start_time DESC, request_id DESC);
