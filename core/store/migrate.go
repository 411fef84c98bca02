package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for the migration runner

	"modelgateway/migrations"
)

// Migrate applies every pending up-migration, then every SQL function file whose text the
// database does not have (migrations.Functions). golang-migrate holds a PostgreSQL advisory
// lock for the duration, so replicas that start together migrate once and the others wait.
func Migrate(ctx context.Context, databaseURL string) error {
	return withMigrator(ctx, databaseURL, func(m *migrate.Migrate, db *sql.DB) error {
		if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return fmt.Errorf("migrate up: %w", err)
		}
		return applyFunctions(ctx, db)
	})
}

// MigrateDown reverts every migration; used by the migrations test and by operators who
// really mean it. The down migrations drop the functions of migrations.Functions with what
// they need.
func MigrateDown(ctx context.Context, databaseURL string) error {
	return withMigrator(ctx, databaseURL, func(m *migrate.Migrate, _ *sql.DB) error {
		if err := m.Down(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return fmt.Errorf("migrate down: %w", err)
		}
		return nil
	})
}

func withMigrator(ctx context.Context, databaseURL string, fn func(*migrate.Migrate, *sql.DB) error) error {
	db, err := sql.Open("pgx", databaseURL)
	if err != nil {
		return fmt.Errorf("open database for migrations: %w", err)
	}
	defer db.Close()
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connect for migrations: %w", err)
	}
	drv, err := migratepgx.WithInstance(db, &migratepgx.Config{MigrationsTable: "schema_migrations"})
	if err != nil {
		return fmt.Errorf("migration driver: %w", err)
	}
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("migration source: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		return fmt.Errorf("migrator: %w", err)
	}
	defer m.Close()
	return fn(m, db)
}
