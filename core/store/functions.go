package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"modelgateway/migrations"
)

// functionsLock is the advisory lock that replicas starting together take to apply the
// function files one at a time: two concurrent CREATE OR REPLACE of one function fail with
// "tuple concurrently updated". (golang-migrate's own lock is released when Up returns.)
const functionsLock = 0x6d67_6675_6e63 // "mgfunc"

// applyFunctions brings every function of migrations.Functions to its file's text. Each file
// runs in a transaction that compares the database's definitions of that name
// (pg_get_functiondef, which does not depend on the file's comments or layout) before and
// after; an unchanged function is rolled back, so a start-up that changes nothing does not
// invalidate the plans the other replicas' connections have cached for it.
func applyFunctions(ctx context.Context, db *sql.DB) error {
	files, err := fs.Glob(migrations.Functions, "functions/*.sql")
	if err != nil {
		return fmt.Errorf("list function files: %w", err)
	}
	for _, file := range files {
		text, err := fs.ReadFile(migrations.Functions, file)
		if err != nil {
			return fmt.Errorf("read %s: %w", file, err)
		}
		name := strings.TrimSuffix(path.Base(file), ".sql")
		if err := applyFunction(ctx, db, name, string(text)); err != nil {
			return fmt.Errorf("function %s: %w", name, err)
		}
	}
	return nil
}

func applyFunction(ctx context.Context, db *sql.DB, name, text string) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	changed := false
	defer func() {
		if err != nil || !changed {
			err = errors.Join(err, ignoreDone(tx.Rollback()))
		}
	}()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(functionsLock)); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	before, err := FunctionDefinition(ctx, tx, name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, text); err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	after, err := FunctionDefinition(ctx, tx, name)
	if err != nil {
		return err
	}
	if after == before {
		return nil
	}
	changed = true
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// Querier is what FunctionDefinition reads through (*sql.DB or *sql.Tx).
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// FunctionDefinition returns the database's definitions of the functions named name in the
// current schema, as PostgreSQL prints them, joined ("" when there is none).
func FunctionDefinition(ctx context.Context, q Querier, name string) (string, error) {
	var def string
	err := q.QueryRowContext(ctx, `
		SELECT coalesce(string_agg(pg_get_functiondef(p.oid), E'\n' ORDER BY p.oid), '')
		FROM pg_proc p WHERE p.proname = $1 AND p.pronamespace = current_schema()::regnamespace`, name).Scan(&def)
	if err != nil {
		return "", fmt.Errorf("read definition: %w", err)
	}
	return def, nil
}
