package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/rpc"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
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
	return c
}

func cmdServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := configFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	g, err := Start(ctx, cfg, slog.Default())
	if err != nil {
		return err
	}
	<-ctx.Done()
	return g.Shutdown(cfg.DrainTimeout)
}

func cmdMigrate(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	cfg := configFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL is not set")
	}
	return store.Migrate(ctx, cfg.DatabaseURL)
}

// Gateway is a running server: both listeners, the snapshot watcher and the pool.
type Gateway struct {
	HTTPAddr, GRPCAddr string
	Store              *store.Store
	Snapshots          *snapshot.Holder
	Admin              *rpc.AdminServer
	// Core is the in-process client the front uses.
	Core corev1.CoreServiceClient

	httpSrv *http.Server
	grpcSrv *grpc.Server
	stop    context.CancelFunc
	done    chan struct{}
}

// Start migrates, loads the snapshot and serves; it returns once both listeners are bound.
func Start(ctx context.Context, cfg *Config, log *slog.Logger) (*Gateway, error) {
	if cfg.DatabaseURL == "" {
		return nil, errors.New("DATABASE_URL is not set: serve needs a PostgreSQL database (make run provides one)")
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	holder, err := snapshot.NewHolder(ctx, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	holder.Log = log
	coreSrv := &rpc.CoreServer{Snapshots: holder, Store: st}
	adminSrv := &rpc.AdminServer{Store: st, Snapshots: holder}
	if cfg.CatalogPath != "" {
		if err := applyCatalogFile(ctx, adminSrv, cfg.CatalogPath); err != nil {
			st.Close()
			return nil, err
		}
	}

	interceptors := []grpc.UnaryServerInterceptor{rpc.ErrorInterceptor(log)}
	if cfg.AdminToken != "" {
		interceptors = append(interceptors, rpc.AdminAuth(cfg.AdminToken))
	}
	grpcSrv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(interceptors...),
		grpc.ChainStreamInterceptor(rpc.StreamErrorInterceptor(log)),
	)
	// The front reaches core over an in-process channel: same generated client, same
	// interceptors, no socket, no serialisation.
	inproc := (&inprocgrpc.Channel{}).
		WithServerUnaryInterceptor(rpc.Chain(interceptors...)).
		WithServerStreamInterceptor(rpc.StreamErrorInterceptor(log))
	for _, reg := range []grpc.ServiceRegistrar{grpcSrv, inproc} {
		corev1.RegisterCoreServiceServer(reg, coreSrv)
		catalogv1.RegisterCatalogServiceServer(reg, &rpc.CatalogServer{Snapshots: holder})
		if cfg.AdminToken != "" {
			adminv1.RegisterAdminServiceServer(reg, adminSrv)
		}
	}
	fcfg := front.Config{
		Core:    corev1.NewCoreServiceClient(inproc),
		Catalog: catalogv1.NewCatalogServiceClient(inproc),
		Ready: func(ctx context.Context) error {
			if holder.Current() == nil {
				return errors.New("snapshot not loaded")
			}
			return st.Pool.Ping(ctx)
		},
		Log: log,
	}
	if cfg.AdminToken != "" {
		fcfg.Admin = adminv1.NewAdminServiceClient(inproc)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	handler, err := front.New(runCtx, fcfg)
	if err != nil {
		stop()
		st.Close()
		return nil, err
	}

	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		stop()
		st.Close()
		return nil, fmt.Errorf("listen http: %w", err)
	}
	grpcLn, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		httpLn.Close()
		stop()
		st.Close()
		return nil, fmt.Errorf("listen grpc: %w", err)
	}
	g := &Gateway{
		HTTPAddr: httpLn.Addr().String(), GRPCAddr: grpcLn.Addr().String(),
		Store: st, Snapshots: holder, Admin: adminSrv, Core: fcfg.Core,
		httpSrv: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second},
		grpcSrv: grpcSrv, stop: stop, done: make(chan struct{}),
	}
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); holder.Run(runCtx, cfg.DatabaseURL) }()
	go func() { _ = grpcSrv.Serve(grpcLn) }()
	go func() {
		defer close(g.done)
		if err := g.httpSrv.Serve(httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server failed", "err", err)
		}
		<-watchDone
	}()
	log.Info("gateway serving", "http", g.HTTPAddr, "grpc", g.GRPCAddr, "admin_api", cfg.AdminToken != "")
	return g, nil
}

// Shutdown stops accepting, drains in-flight requests and streams within the bound, then
// releases the database.
func (g *Gateway) Shutdown(drain time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := g.httpSrv.Shutdown(ctx)
	stopped := make(chan struct{})
	go func() { g.grpcSrv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		g.grpcSrv.Stop()
	}
	g.stop()
	<-g.done
	g.Store.Close()
	return err
}

func applyCatalogFile(ctx context.Context, admin *rpc.AdminServer, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read catalog: %w", err)
	}
	doc, err := catalog.Parse(data)
	if err != nil {
		return fmt.Errorf("catalog %s: %w", path, err)
	}
	if _, err := admin.Store.ApplyCatalog(ctx, doc); err != nil {
		return fmt.Errorf("apply catalog %s: %w", path, err)
	}
	return admin.Snapshots.Reload(ctx)
}
