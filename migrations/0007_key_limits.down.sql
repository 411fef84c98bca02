ALTER TABLE api_keys DROP COLUMN max_concurrent, DROP COLUMN max_rps;
