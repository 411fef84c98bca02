-- Request ids are taken once, across every profile, key, route and replica (contract: "Where
-- spec.md leaves a choice"). requests is keyed by (profile_id, request_id), so two profiles
-- could each use one id; a unique index on requests.request_id would fail on deployments
-- where that already happened, so the ids taken live in a table of their own, keyed by the
-- id alone. Reservation inserts here and into requests in one statement (store
-- ReserveRequestID). Nothing prunes this table: an id stays taken for good.

CREATE TABLE request_ids (
    request_id text PRIMARY KEY,
    taken_at   timestamptz NOT NULL DEFAULT now()
);

-- Every id already used is taken. Ids with a space are the gateway's derived ids (a realtime
-- response's record), which no client can send.
INSERT INTO request_ids (request_id)
SELECT DISTINCT request_id FROM requests WHERE strpos(request_id, ' ') = 0
ON CONFLICT DO NOTHING;

-- A client id whose reservation could not be written (the database was away) is recorded by
-- settlement later, as unavailable: it is taken then. Reservations ('in_progress') take their
-- id themselves; gateway ids ('gw-', any case) and derived ids (with a space) are the
-- gateway's alone and need no entry.
CREATE FUNCTION take_request_id() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO request_ids (request_id) VALUES (NEW.request_id) ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER requests_take_id AFTER INSERT ON requests FOR EACH ROW
WHEN (NEW.status <> 'in_progress' AND lower(left(NEW.request_id, 3)) <> 'gw-' AND strpos(NEW.request_id, ' ') = 0)
EXECUTE FUNCTION take_request_id();

