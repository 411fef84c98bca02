ALTER TABLE api_keys DROP COLUMN max_tpm;
