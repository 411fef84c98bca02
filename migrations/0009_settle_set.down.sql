ALTER TABLE requests ADD CONSTRAINT requests_profile_id_fkey FOREIGN KEY (profile_id) REFERENCES profiles(id);
ALTER TABLE requests ADD CONSTRAINT requests_key_id_fkey FOREIGN KEY (key_id) REFERENCES api_keys(id);
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_profile_id_fkey FOREIGN KEY (profile_id) REFERENCES profiles(id);
