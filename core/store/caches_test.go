package store

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// The per-connection caches are lean unless the database URL sizes them, and the description
// cache stays where the URL's execution mode uses it.
func TestLeanCaches(t *testing.T) {
	for _, c := range []struct {
		query            string
		stmts, describes int
	}{
		{"", statementCacheCapacity, 0},
		{"?default_query_exec_mode=exec", statementCacheCapacity, 0},
		{"?default_query_exec_mode=cache_describe", statementCacheCapacity, 512},
		{"?statement_cache_capacity=300&description_cache_capacity=7", 300, 7},
	} {
		url := "postgres://u@localhost:5432/db" + c.query
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		if c.query == "" && (cfg.StatementCacheCapacity != 512 || cfg.DescriptionCacheCapacity != 512) {
			t.Fatalf("%q: pgx's defaults changed: %d, %d", c.query, cfg.StatementCacheCapacity, cfg.DescriptionCacheCapacity)
		}
		leanCaches(cfg, url)
		if cfg.StatementCacheCapacity != c.stmts || cfg.DescriptionCacheCapacity != c.describes {
			t.Errorf("%q: caches %d, %d; want %d, %d", c.query, cfg.StatementCacheCapacity, cfg.DescriptionCacheCapacity, c.stmts, c.describes)
		}
	}
}
