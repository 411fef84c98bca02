DROP FUNCTION gateway_extend_lease;
