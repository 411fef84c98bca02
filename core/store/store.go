// Package store is the PostgreSQL edge: a pgx pool, the queries, and one interpretError that
// turns driver errors into the few outcomes callers branch on.
package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"modelgateway/core/wire/rawsock"
)

// Errors callers branch on; everything else is an internal failure.
var (
	ErrNotFound      = errors.New("not found")
	ErrAlreadyExists = errors.New("already exists")
)

// Store wraps the pool; methods are short and convert results at the edge.
type Store struct {
	Pool *pgxpool.Pool
}

// Open connects a pool and checks that the server answers.
func Open(ctx context.Context, databaseURL string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// A database that does not answer must fail a request in bounded time, not hang it.
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	leanCaches(cfg.ConnConfig, databaseURL)
	rawSockets(&cfg.ConnConfig.Config)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return &Store{Pool: pool}, nil
}

// rawSockets reads and writes the database's connections with raw system calls
// (core/wire/rawsock): the committer's read of a commit's answer came after the gateway had
// idled on it, and as a system call it woke the runtime's monitor thread into fast polling,
// 158 of 177 such wakes in the bench's stream scenario.
func rawSockets(cfg *pgconn.Config) {
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return rawsock.Wrap(c), nil
	}
}

// statementCacheCapacity is the statements a connection keeps prepared (pgx's default 512):
// the gateway runs a few dozen kinds of statement, a handful per request, and each cache is
// a map made at its full capacity per connection (512: 25.6 KB, 128: 6.4 KB).
const statementCacheCapacity = 128

// leanCaches sizes pgx's per-connection caches where the database URL does not: the
// statement cache at statementCacheCapacity, and no description cache where nothing uses
// it (only the cache_describe execution mode does; the gateway passes no mode per query).
// The two 512-entry maps were some 50 KB of live heap per connection, and the pool grows to
// its maximum under load and keeps its connections (the GC's goal doubles them).
func leanCaches(cfg *pgx.ConnConfig, databaseURL string) {
	if !strings.Contains(databaseURL, "statement_cache_capacity") {
		cfg.StatementCacheCapacity = statementCacheCapacity
	}
	if !strings.Contains(databaseURL, "description_cache_capacity") && cfg.DefaultQueryExecMode != pgx.QueryExecModeCacheDescribe {
		cfg.DescriptionCacheCapacity = 0
	}
}

// Close releases the pool.
func (s *Store) Close() { s.Pool.Close() }

// Unreachable tells that err came from the connection to the database, not from a statement:
// the server refused, reset or closed it, or went away (SQLSTATE classes 08, 53, 57, 58), a
// connection the driver had already closed was used, connecting failed, or the call timed
// out. The caller may succeed later with the same request, so a client is told 503
// unavailable, never internal_error. Unlike Unavailable, anything else is not unreachable.
func Unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "53", "57", "58":
			return true
		}
		return false
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.Is(err, pgconn.ErrConnClosed) || errors.As(err, &connectErr) || pgconn.Timeout(err) ||
		pgconn.SafeToRetry(err) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// interpretError maps no-rows and unique violations to the sentinel errors.
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%w: %s", ErrAlreadyExists, pgErr.ConstraintName)
	}
	return err
}

// inTx runs fn in a transaction, committing when it returns nil.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.Pool, fn)
}
