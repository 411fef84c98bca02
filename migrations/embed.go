// Package migrations holds the PostgreSQL schema as numbered up/down SQL files,
// embedded so the single gateway binary can migrate any database it is pointed at.
package migrations

import "embed"

// FS holds NNNN_name.up.sql / NNNN_name.down.sql pairs.
//
//go:embed *.sql
var FS embed.FS
