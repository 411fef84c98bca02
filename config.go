package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"modelgateway/core/admin"
	"modelgateway/core/batchrun"
	"modelgateway/core/catalog"
	"modelgateway/core/fx"
	"modelgateway/core/rpc"
	"modelgateway/core/telemetry"
	"modelgateway/front"
)

// Config is the process configuration of contract.md; flags mirror the environment.
type Config struct {
	DatabaseURL  string
	HTTPAddr     string
	GRPCAddr     string
	AdminToken   string
	CatalogPath  string
	DrainTimeout time.Duration
	// Observer sees every generation outcome after billing, beside the telemetry.
	Observer rpc.Observer
	// Env reads provider credentials; os.Getenv when nil (tests inject their own).
	Env func(string) string
	// FxURL is a CBR-format daily rates document fetched on a schedule; empty: off.
	FxURL      string
	FxInterval time.Duration
	// AdminHTTPAddr, when set, is the only listener of the admin routes (GATEWAY_ADMIN_HTTP_ADDR).
	AdminHTTPAddr string
	// Limits bound request bodies (front.LimitsFromEnv); zero values are the defaults.
	Limits front.Limits
	// RealtimeMaxSession ends realtime sessions after this long; 0: no limit
	// (GATEWAY_REALTIME_MAX_SESSION).
	RealtimeMaxSession time.Duration
	// Replicas, when above 0, overrides the number of replicas sharing each key's limits
	// (GATEWAY_REPLICAS); unset, each replica follows the live replicas in the database.
	Replicas int
	// MetricsAddr serves GET /metrics (GATEWAY_METRICS_ADDR); empty: off.
	MetricsAddr string
	// Telemetry adjusts the telemetry options (tests add exporters); nil: as configured.
	Telemetry func(*telemetry.Options)
	// RealtimeIdle closes a realtime session after this long without a frame; 0 is the
	// realtime package's default (tests shorten it).
	RealtimeIdle time.Duration
	// ResponsesTTL is how long stored responses are kept (GATEWAY_RESPONSES_TTL, default
	// 720h).
	ResponsesTTL time.Duration
	// Batches are the files and batches settings: GATEWAY_FILES_MAX_BYTES,
	// GATEWAY_FILES_QUOTA_BYTES, GATEWAY_BATCH_WINDOW (what completion_window "24h" lasts; for
	// tests) and GATEWAY_BATCH_CONCURRENCY (items run at once on this replica, default 4).
	Batches          rpc.BatchConfig
	BatchConcurrency int
	// BatchLease is how long a batch item's claim lasts unrenewed (GATEWAY_BATCH_LEASE; tests
	// shorten it): a replica that died loses its items to the others after it.
	BatchLease time.Duration
	// Step, when set, hears each step of Start as it ends ("migrations"); `make run` prints
	// a line with its duration for each.
	Step func(step string)
	// HTTPServer picks the client listener's HTTP/1.1 server (GATEWAY_HTTP_SERVER): "lean"
	// (front/h1, the default when empty) or "net" (net/http's).
	HTTPServer string
}

func configFlags(fs *flag.FlagSet) *Config {
	c := &Config{}
	fs.StringVar(&c.DatabaseURL, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL connection string (DATABASE_URL)")
	fs.StringVar(&c.HTTPAddr, "http-addr", envOr("GATEWAY_HTTP_ADDR", "127.0.0.1:8080"), "client and admin HTTP listener (GATEWAY_HTTP_ADDR)")
	fs.StringVar(&c.GRPCAddr, "grpc-addr", envOr("GATEWAY_GRPC_ADDR", "127.0.0.1:9090"), "gRPC listener (GATEWAY_GRPC_ADDR)")
	fs.StringVar(&c.AdminToken, "admin-token", os.Getenv("GATEWAY_ADMIN_TOKEN"), "admin bearer token; admin API off when empty (GATEWAY_ADMIN_TOKEN)")
	fs.StringVar(&c.CatalogPath, "catalog", os.Getenv("GATEWAY_CATALOG"), "catalog document applied at start-up (GATEWAY_CATALOG)")
	drain, err := time.ParseDuration(envOr("GATEWAY_DRAIN_TIMEOUT", "30s"))
	if err != nil {
		drain = 30 * time.Second
	}
	fs.DurationVar(&c.DrainTimeout, "drain-timeout", drain, "bound on draining in-flight requests at shutdown (GATEWAY_DRAIN_TIMEOUT)")
	fs.StringVar(&c.FxURL, "fx-url", os.Getenv("GATEWAY_FX_URL"), "CBR-format rates URL, e.g. "+fx.CBRDailyURL+"; off when empty (GATEWAY_FX_URL)")
	fxEvery, err := time.ParseDuration(envOr("GATEWAY_FX_INTERVAL", "6h"))
	if err != nil || fxEvery <= 0 {
		fxEvery = fx.DefaultInterval
	}
	fs.StringVar(&c.AdminHTTPAddr, "admin-http-addr", os.Getenv("GATEWAY_ADMIN_HTTP_ADDR"), "listener of the admin routes alone; empty: they share the client listener (GATEWAY_ADMIN_HTTP_ADDR)")
	c.Limits = front.LimitsFromEnv(os.Getenv)
	c.HTTPServer = os.Getenv("GATEWAY_HTTP_SERVER")
	c.RealtimeMaxSession, _ = time.ParseDuration(os.Getenv("GATEWAY_REALTIME_MAX_SESSION"))
	c.Replicas, _ = strconv.Atoi(os.Getenv("GATEWAY_REPLICAS"))
	c.ResponsesTTL, _ = time.ParseDuration(os.Getenv("GATEWAY_RESPONSES_TTL"))
	c.Batches.FilesMaxBytes, _ = strconv.ParseInt(os.Getenv("GATEWAY_FILES_MAX_BYTES"), 10, 64)
	c.Batches.FilesQuotaBytes, _ = strconv.ParseInt(os.Getenv("GATEWAY_FILES_QUOTA_BYTES"), 10, 64)
	c.Batches.Window, _ = time.ParseDuration(os.Getenv("GATEWAY_BATCH_WINDOW"))
	c.BatchConcurrency = batchrun.DefaultConcurrency
	if v, err := strconv.Atoi(os.Getenv("GATEWAY_BATCH_CONCURRENCY")); err == nil {
		c.BatchConcurrency = v
	}
	c.BatchLease, _ = time.ParseDuration(os.Getenv("GATEWAY_BATCH_LEASE"))
	fs.DurationVar(&c.FxInterval, "fx-interval", fxEvery, "time between FX fetches (GATEWAY_FX_INTERVAL)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", metricsAddr(), "GET /metrics listener; off when empty (GATEWAY_METRICS_ADDR)")
	return c
}

// metricsAddr is GATEWAY_METRICS_ADDR: set and empty turns the listener off.
func metricsAddr() string {
	if v, ok := os.LookupEnv("GATEWAY_METRICS_ADDR"); ok {
		return v
	}
	return "127.0.0.1:9464"
}

// envOr is the environment variable name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// applyCatalogFile applies the -catalog document at start-up, as `gateway apply` would.
func applyCatalogFile(ctx context.Context, srv *admin.Server, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read catalog: %w", err)
	}
	doc, err := catalog.Parse(data)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", path, err)
	}
	if _, err := srv.Store.ApplyCatalog(ctx, doc); err != nil {
		return fmt.Errorf("apply catalog %s: %w", path, err)
	}
	return srv.Snapshots.Reload(ctx)
}
