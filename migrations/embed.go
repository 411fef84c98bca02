// Package migrations holds the PostgreSQL schema as numbered up/down SQL files,
// embedded so the single gateway binary can migrate any database it is pointed at.
package migrations

import "embed"

// FS holds NNNN_name.up.sql / NNNN_name.down.sql pairs.
//
//go:embed *.sql
var FS embed.FS

// Functions holds functions/NAME.sql, each the one current text of the SQL function NAME
// (a CREATE OR REPLACE FUNCTION statement). A function's text changes in place, not by a new
// numbered migration that repeats it in full, so its history is the file's git log. The
// runner (store.Migrate) applies a file after the numbered migrations whenever the database's
// definition differs from it. So that every schema version stays usable:
//   - a file may use only what the latest numbered migration leaves (the down migration that
//     removes what it needs drops it with DROP FUNCTION IF EXISTS);
//   - a trigger's function stays in the numbered migration that creates the trigger, which
//     needs it to exist;
//   - a changed signature needs a numbered migration that drops the old one (CREATE OR
//     REPLACE would add a second function beside it).
//
//go:embed functions/*.sql
var Functions embed.FS
