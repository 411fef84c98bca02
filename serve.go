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
	"slices"
	"time"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/billing"
	"modelgateway/core/catalog"
	"modelgateway/core/fx"
	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/gemini"
	"modelgateway/core/provider/openai"
	"modelgateway/core/provider/rerank"
	"modelgateway/core/provider/simulator"
	"modelgateway/core/rpc"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/tokens"
	"modelgateway/core/verify"
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
	// Meter observes every generation outcome after billing; nil logs them at debug level.
	Meter rpc.Meter
	// Env reads provider credentials; os.Getenv when nil (tests inject their own).
	Env func(string) string
	// FxURL is a CBR-format daily rates document fetched on a schedule; empty: off.
	FxURL      string
	FxInterval time.Duration
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
	fs.DurationVar(&c.FxInterval, "fx-interval", fxEvery, "time between FX fetches (GATEWAY_FX_INTERVAL)")
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

	front   *front.Server
	httpSrv *http.Server
	grpcSrv *grpc.Server
	simSrv  *http.Server
	ledger  *billing.Ledger
	// closed when the ledger's background loop has stopped
	ledgerDone chan struct{}
	stop       context.CancelFunc
	done       chan struct{}
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
	var closers []func()
	fail := func(err error) (*Gateway, error) {
		for _, c := range slices.Backward(closers) {
			c()
		}
		st.Close()
		return nil, err
	}
	holder, err := snapshot.NewHolder(ctx, st)
	if err != nil {
		return fail(err)
	}
	holder.Log = log
	// The built-in simulator serves providers of kind "simulator" that name no base_url.
	simLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(fmt.Errorf("listen simulator: %w", err))
	}
	simSrv := &http.Server{Handler: simulator.New(simulator.Options{}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = simSrv.Serve(simLn) }()
	closers = append(closers, func() { _ = simSrv.Close() })
	meter := cfg.Meter
	if meter == nil {
		meter = logMeter{log}
	}
	adapters := map[string]provider.Adapter{"openai": openai.Adapter{}, "anthropic": anthropic.Adapter{}, "gemini": gemini.Adapter{}, "rerank": rerank.Adapter{}}
	adapters["simulator"] = provider.Native{OpenAI: adapters["openai"], Anthropic: adapters["anthropic"], Gemini: adapters["gemini"], DefaultBase: "http://" + simLn.Addr().String()}
	ledger := billing.NewLedger(st, log)
	coreSrv := &rpc.CoreServer{Snapshots: holder, Store: st, Gen: &rpc.Generator{
		Adapters: adapters, Counter: tokens.Count, TextCounter: tokens.CountTexts, Ledger: ledger, Meter: meter, Log: log, Env: cfg.Env,
	}}
	adminSrv := &rpc.AdminServer{Store: st, Snapshots: holder, Verifier: &verify.Prober{Adapters: adapters, Env: cfg.Env, Log: log}}
	if cfg.CatalogPath != "" {
		if err := applyCatalogFile(ctx, adminSrv, cfg.CatalogPath); err != nil {
			return fail(err)
		}
	}

	interceptors := []grpc.UnaryServerInterceptor{rpc.ErrorInterceptor(log)}
	if cfg.AdminToken != "" {
		interceptors = append(interceptors, rpc.AdminAuth(cfg.AdminToken))
	}
	// Callers over the socket are clients: internal metadata is for the in-process front only.
	grpcSrv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{rpc.ExternalUnary}, interceptors...)...),
		grpc.ChainStreamInterceptor(rpc.ExternalStream, rpc.StreamErrorInterceptor(log)),
	)
	// The front reaches core over an in-process channel: same generated client, same
	// interceptors, no socket, no serialisation. Messages change hands instead of being
	// deep-copied (neither side touches a message after sending it), so a 32 MiB request body
	// or a stream of chunks costs no copies.
	inproc := (&inprocgrpc.Channel{}).
		WithCloner(inprocgrpc.CloneFunc(func(m any) (any, error) { return m, nil })).
		WithServerUnaryInterceptor(rpc.Chain(interceptors...)).
		WithServerStreamInterceptor(rpc.StreamErrorInterceptor(log))
	for _, reg := range []grpc.ServiceRegistrar{grpcSrv, inproc} {
		corev1.RegisterCoreServiceServer(reg, coreSrv)
		catalogv1.RegisterCatalogServiceServer(reg, &rpc.CatalogServer{Snapshots: holder})
		if cfg.AdminToken != "" {
			adminv1.RegisterAdminServiceServer(reg, adminSrv)
		}
	}
	streamErrors := rpc.StreamErrorInterceptor(log)
	// inHandler runs a streaming RPC in the HTTP handler's goroutine, through the same
	// interceptor as any stream.
	inHandler := func(method string, stream grpc.ServerStream, call func() error) error {
		info := &grpc.StreamServerInfo{FullMethod: method, IsServerStream: true, IsClientStream: method != corev1.CoreService_Generate_FullMethodName}
		return streamErrors(coreSrv, stream, info, func(any, grpc.ServerStream) error { return call() })
	}
	fcfg := front.Config{
		Core: corev1.NewCoreServiceClient(inproc),
		// Streams call the server directly; unary calls go over the in-process channel.
		Generate: func(req *corev1.GenerateRequest, stream corev1.CoreService_GenerateServer) error {
			return inHandler(corev1.CoreService_Generate_FullMethodName, stream, func() error { return coreSrv.Generate(req, stream) })
		},
		Forward: func(stream corev1.CoreService_ForwardServer) error {
			return inHandler(corev1.CoreService_Forward_FullMethodName, stream, func() error { return coreSrv.Forward(stream) })
		},
		Realtime: func(stream corev1.CoreService_RealtimeServer) error {
			return inHandler(corev1.CoreService_Realtime_FullMethodName, stream, func() error { return coreSrv.Realtime(stream) })
		},
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
	closers = append(closers, stop)
	handler, err := front.New(runCtx, fcfg)
	if err != nil {
		return fail(err)
	}

	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fail(fmt.Errorf("listen http: %w", err))
	}
	closers = append(closers, func() { httpLn.Close() })
	grpcLn, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fail(fmt.Errorf("listen grpc: %w", err))
	}
	g := &Gateway{
		HTTPAddr: httpLn.Addr().String(), GRPCAddr: grpcLn.Addr().String(),
		Store: st, Snapshots: holder, Admin: adminSrv, Core: fcfg.Core,
		front: handler, httpSrv: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second},
		grpcSrv: grpcSrv, stop: stop, done: make(chan struct{}), simSrv: simSrv,
	}
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); holder.Run(runCtx, cfg.DatabaseURL) }()
	ledgerDone := make(chan struct{})
	go func() { defer close(ledgerDone); ledger.Run(runCtx) }()
	if cfg.FxURL != "" {
		f := &fx.Fetcher{URL: cfg.FxURL, Interval: cfg.FxInterval, Store: st,
			BillingCurrency: func() string { return holder.Current().Currency }, Log: log.With("component", "fx")}
		go f.Run(runCtx)
	}
	g.ledger, g.ledgerDone = ledger, ledgerDone
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
	// Upgraded realtime connections are not the HTTP server's to drain: close them alongside.
	realtimeDone := make(chan error, 1)
	go func() { realtimeDone <- g.front.Shutdown(ctx) }()
	err := errors.Join(g.httpSrv.Shutdown(ctx), <-realtimeDone)
	stopped := make(chan struct{})
	go func() { g.grpcSrv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		g.grpcSrv.Stop()
	}
	g.stop()
	<-g.done
	<-g.ledgerDone
	// Charges are durable before answers end; what is left are records without a charge,
	// retried for the drain time (at least 10 s) in case the database is down right now.
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), max(drain, 10*time.Second))
	defer cancelFlush()
	err = errors.Join(err, g.ledger.Close(flushCtx))
	_ = g.simSrv.Close()
	g.Store.Close()
	return err
}

// logMeter logs every outcome at debug level.
type logMeter struct{ log *slog.Logger }

func (m logMeter) Record(_ context.Context, o rpc.Outcome) {
	m.log.Debug("generation", "request_id", o.RequestID, "model", o.Model, "family", o.EndpointFamily,
		"provider", o.Provider, "status", o.Status, "reliable", o.Usage.Reliable,
		"input", o.Usage.Input, "cached", o.Usage.CachedInput, "cache_write", o.Usage.CacheWrite, "output", o.Usage.Output,
		"cost", o.Cost.Decimal, "charged", o.Cost.Valid)
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
