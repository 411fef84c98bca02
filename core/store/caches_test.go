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

// A connection's kept settlement buffer grows with the groups, keeps its size through a mix
// of group sizes, and after shrinkAfter small statements in a row takes their size.
func TestSettleBufferShrinksAfterABurst(t *testing.T) {
	var b settleBuffer
	b.size(40 << 10) // a group commit of the burst
	burst := cap(b.buf)
	if burst < 40<<10 {
		t.Fatalf("grew to %d for 40 KiB", burst)
	}
	for range 3 * shrinkAfter { // small groups between large ones: kept
		for range shrinkAfter - 1 {
			b.size(2 << 10)
		}
		b.size(30 << 10)
	}
	if cap(b.buf) != burst {
		t.Fatalf("a mix of groups changed the buffer: %d -> %d", burst, cap(b.buf))
	}
	for i := range shrinkAfter {
		if cap(b.buf) != burst {
			t.Fatalf("shrank after %d small statements, want %d", i, shrinkAfter)
		}
		b.size(2 << 10)
	}
	if got := cap(b.buf); got >= burst || got < 2<<10 {
		t.Fatalf("after %d small statements the buffer is %d, want about 2 KiB", shrinkAfter, got)
	}
	small := cap(b.buf)
	for range 4 * shrinkAfter { // small ones at their size: no reallocation
		b.size(2 << 10)
	}
	if cap(b.buf) != small {
		t.Fatalf("a buffer of the statements' size was made again: %d -> %d", small, cap(b.buf))
	}
}
