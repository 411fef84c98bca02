DROP TRIGGER requests_take_id ON requests;
DROP FUNCTION take_request_id();
DROP TABLE request_ids;
