-- gateway_budget_window is the start of the budget window of period (TOTAL, DAY, WEEK, MONTH)
-- that holds the instant t: UTC calendar windows, weeks from Monday (date_trunc's ISO week);
-- TOTAL's one window starts at the epoch. core/billing's Window computes the same in Go; the
-- two must agree (TestBudgetWindowAgrees), since lease rows are keyed by the window's start.
--
-- This file is the function's only text: store.Migrate applies it after the numbered
-- migrations whenever the database's definition differs (see migrations/embed.go).
CREATE OR REPLACE FUNCTION gateway_budget_window(p_period text, t timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE p_period
        WHEN 'DAY' THEN date_trunc('day', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        WHEN 'WEEK' THEN date_trunc('week', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        WHEN 'MONTH' THEN date_trunc('month', t AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
        ELSE timestamptz '1970-01-01 00:00:00+00'
    END
$$;
