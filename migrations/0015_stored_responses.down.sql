DROP TABLE IF EXISTS stored_responses;
