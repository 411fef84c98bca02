package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
)

// latestMigration is the highest version in migrations/.
func latestMigration(t *testing.T) int64 {
	t.Helper()
	entries, err := os.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	var latest int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".up.sql") {
			continue
		}
		v, err := strconv.ParseInt(strings.SplitN(e.Name(), "_", 2)[0], 10, 64)
		if err != nil {
			t.Fatalf("migration %s: %v", e.Name(), err)
		}
		latest = max(latest, v)
	}
	return latest
}

// Four replicas of `serve` starting at once on an empty database: the advisory lock lets one
// migrate while the others wait, every one of them starts and serves, the schema is at the
// latest version and clean, and the catalogue each applies at start-up gives one ETag.
// Without the lock (golang-migrate's driver with Lock and Unlock made no-ops) every run fails:
// the replicas that lose the race find the schema dirty at version 1 and do not start.
func TestConcurrentStartupMigratesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.DatabaseURL(t)
	if err := store.MigrateDown(ctx, db); err != nil {
		t.Fatal(err)
	}
	probe, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	var exists bool
	if err := probe.Pool.QueryRow(ctx, `SELECT to_regclass('profiles') IS NOT NULL`).Scan(&exists); err != nil || exists {
		t.Fatalf("the database is not empty before the start (profiles exists: %v, %v)", exists, err)
	}

	doc := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(doc, []byte(strings.Join([]string{
		"families: [{id: f}]",
		"providers: [{id: p, kind: simulator, base_url: 'http://127.0.0.1:1'}]",
		"models:",
		"  - {id: boot-model, family: f, routes: [{endpoint_families: [chat.completions], provider: p}],",
		"     prices: [{endpoint_families: [chat.completions], billing_mode: per_token, input: 1, output: 2}]}",
	}, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}

	const n = 4
	gws := make([]*Gateway, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			cfg := &Config{DatabaseURL: db, HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", DrainTimeout: 5 * time.Second, CatalogPath: doc}
			gws[i], errs[i] = Start(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		})
	}
	close(start)
	wg.Wait()
	for i, g := range gws {
		if errs[i] != nil {
			t.Errorf("replica %d did not start: %v", i, errs[i])
			continue
		}
		t.Cleanup(func() {
			http.DefaultClient.CloseIdleConnections()
			if err := g.Shutdown(5 * time.Second); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		})
	}
	if t.Failed() {
		t.FailNow()
	}

	var version int64
	var dirty bool
	if err := probe.Pool.QueryRow(ctx, `SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty); err != nil {
		t.Fatal(err)
	}
	if want := latestMigration(t); version != want || dirty {
		t.Errorf("schema at version %d (dirty %v), want %d clean", version, dirty, want)
	}
	var tag string
	for i, g := range gws {
		base := "http://" + g.HTTPAddr
		if status, _, _ := gatewaytest.GetCatalog(t, base, ""); status != 200 {
			t.Errorf("replica %d: catalogue %d", i, status)
		}
		_, etag, body := gatewaytest.GetCatalog(t, base, "")
		if !strings.Contains(string(body), "boot-model") {
			t.Errorf("replica %d: catalogue without the start-up model: %s", i, body)
		}
		if i > 0 && etag != tag {
			t.Errorf("replica %d: ETag %s, replica 0 %s", i, etag, tag)
		}
		tag = etag
	}
}
