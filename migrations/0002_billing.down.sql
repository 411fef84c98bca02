DROP TABLE balance_leases;
