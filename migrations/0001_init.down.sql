DROP TABLE IF EXISTS requests, ledger_entries, fx_snapshots, capabilities, prices, model_routes,
    models, providers, families, api_keys, profiles, settings CASCADE;
DROP FUNCTION IF EXISTS notify_snapshot();
