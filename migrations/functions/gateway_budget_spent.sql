-- gateway_budget_spent is what the key's charges took in the budget window of period that
-- starts at p_window: the sum of its key_spend days in the window (at most 31 rows; TOTAL's
-- window has no end).
--
-- This file is the function's only text: store.Migrate applies it after the numbered
-- migrations whenever the database's definition differs (see migrations/embed.go).
CREATE OR REPLACE FUNCTION gateway_budget_spent(p_key uuid, p_period text, p_window timestamptz)
RETURNS numeric
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(s.spent), 0) FROM key_spend s
    WHERE s.key_id = p_key AND s.day >= (p_window AT TIME ZONE 'UTC')::date
      AND s.day < CASE p_period
          WHEN 'DAY' THEN (p_window AT TIME ZONE 'UTC')::date + 1
          WHEN 'WEEK' THEN (p_window AT TIME ZONE 'UTC')::date + 7
          WHEN 'MONTH' THEN ((p_window AT TIME ZONE 'UTC') + interval '1 month')::date
          ELSE date 'infinity'
      END
$$;
