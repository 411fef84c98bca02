-- Migration 0010 changed only gateway_settle, whose one text is migrations/functions/gateway_settle.sql
-- (the database keeps the current one when this is undone; it runs on every schema from 0004 on).
SELECT 1;
