DROP TABLE IF EXISTS status_leases;
DROP TABLE IF EXISTS status_incident_updates;
DROP TABLE IF EXISTS status_incidents;
DROP TABLE IF EXISTS status_model_success;
DROP TABLE IF EXISTS status_model_minutes;
DROP TABLE IF EXISTS status_days;
DROP TABLE IF EXISTS status_minutes;
