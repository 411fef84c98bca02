// Package storetest gives every test a real, migrated, isolated PostgreSQL database.
//
// The server is TEST_DATABASE_URL when set; otherwise a throwaway cluster is started from the
// machine's PostgreSQL binaries once per test binary (about a second: initdb plus start, fsync
// off) and stopped by Main. A template database is migrated once per process; every
// DatabaseURL call clones it (CREATE DATABASE ... TEMPLATE, tens of milliseconds) and drops
// the clone when the test ends. A database per test, rather than a rolled-back transaction,
// is what lets tests commit, LISTEN, and run two gateway instances on one database.
package storetest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"modelgateway/core/store"
	"modelgateway/core/store/pgcluster"
)

var (
	once     sync.Once
	setupErr error
	cluster  *pgcluster.Cluster
	adminURL string // maintenance database on the server
	template string
	counter  atomic.Int64
)

// Main runs the package's tests and then stops the throwaway cluster.
func Main(m *testing.M) {
	code := m.Run()
	teardown()
	os.Exit(code)
}

// Stop stops the throwaway cluster (or drops the template on TEST_DATABASE_URL's server); for
// a TestMain that has more to end than Main does.
func Stop() { teardown() }

func setup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		adminURL = u
	} else {
		cluster, setupErr = pgcluster.Start(ctx, pgcluster.Options{})
		if setupErr != nil {
			return
		}
		adminURL = cluster.URL("postgres")
	}
	template = fmt.Sprintf("gwtest_tmpl_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if setupErr = exec(ctx, adminURL, "CREATE DATABASE "+template); setupErr != nil {
		return
	}
	if setupErr = store.Migrate(ctx, withDatabase(adminURL, template)); setupErr != nil {
		setupErr = fmt.Errorf("migrate template: %w", setupErr)
		return
	}
	setupErr = exec(ctx, adminURL, "ALTER DATABASE "+template+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false")
}

func teardown() {
	if cluster != nil {
		cluster.Stop()
		return
	}
	if template != "" && setupErr == nil {
		ctx := context.Background()
		_ = exec(ctx, adminURL, "ALTER DATABASE "+template+" WITH IS_TEMPLATE false")
		_ = exec(ctx, adminURL, "DROP DATABASE IF EXISTS "+template+" WITH (FORCE)")
	}
}

// DatabaseURL is a fresh migrated database, dropped when the test ends.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	once.Do(setup)
	if setupErr != nil {
		t.Fatalf("test database: %v", setupErr)
	}
	name := fmt.Sprintf("%s_%d", template, counter.Add(1))
	ctx := context.Background()
	if err := exec(ctx, adminURL, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
		t.Fatalf("clone test database: %v", err)
	}
	t.Cleanup(func() {
		if err := exec(context.Background(), adminURL, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	return withDatabase(adminURL, name)
}

// Pool is a pgx pool on a fresh database, closed when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), DatabaseURL(t))
	if err != nil {
		t.Fatalf("open pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func exec(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func withDatabase(dsn, db string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Path = "/" + db
	return u.String()
}
