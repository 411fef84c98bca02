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
	"strconv"
	"time"

	"github.com/fullstorydev/grpchan/inprocgrpc"
	"google.golang.org/grpc"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/admin"
	"modelgateway/core/billing"
	"modelgateway/core/catalog"
	"modelgateway/core/fx"
	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/gemini"
	"modelgateway/core/provider/openai"
	"modelgateway/core/provider/rerank"
	"modelgateway/core/rpc"
	"modelgateway/core/simulator"
	"modelgateway/core/snapshot"
	"modelgateway/core/statusdata"
	"modelgateway/core/store"
	"modelgateway/core/telemetry"
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
	// Replicas is how many replicas share each key's request limits (GATEWAY_REPLICAS).
	Replicas int
	// MetricsAddr serves GET /metrics (GATEWAY_METRICS_ADDR); empty: off.
	MetricsAddr string
	// Telemetry adjusts the telemetry options (tests add exporters); nil: as configured.
	Telemetry func(*telemetry.Options)
	// RealtimeIdle closes a realtime session after this long without a frame; 0 is the
	// realtime package's default (tests shorten it).
	RealtimeIdle time.Duration
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
	c.RealtimeMaxSession, _ = time.ParseDuration(os.Getenv("GATEWAY_REALTIME_MAX_SESSION"))
	c.Replicas, _ = strconv.Atoi(os.Getenv("GATEWAY_REPLICAS"))
	fs.DurationVar(&c.FxInterval, "fx-interval", fxEvery, "time between FX fetches (GATEWAY_FX_INTERVAL)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", metricsAddr(), "GET /metrics listener; off when empty (GATEWAY_METRICS_ADDR)")
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
	AdminHTTPAddr      string // empty unless GATEWAY_ADMIN_HTTP_ADDR is set
	Store              *store.Store
	Snapshots          *snapshot.Holder
	Admin              *admin.Server
	// Core is the in-process client the front uses.
	Core corev1.CoreServiceClient
	// Status counts outcomes for the status site; Flush writes them out at once.
	Status *statusdata.Recorder
	// MetricsAddr is the bound GET /metrics listener; empty when off.
	MetricsAddr string

	front   *front.Server
	httpSrv *http.Server
	grpcSrv *grpc.Server
	simSrv  *http.Server
	ledger  *billing.Ledger
	// closed when the ledger's background loop has stopped
	ledgerDone chan struct{}
	statusDone chan struct{}
	tel        *telemetry.Telemetry
	stop       context.CancelFunc
	done       chan struct{}

	// adminSrv serves GATEWAY_ADMIN_HTTP_ADDR; nil when the admin routes share httpSrv
	adminSrv *http.Server
	// streams are the calls core runs in HTTP handlers: after the drain bound they are cut,
	// and the ledger closes only once they have queued their records.
	streams *rpc.InProcess
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
	adapters := map[string]provider.Adapter{"openai": openai.Adapter{}, "anthropic": anthropic.Adapter{}, "gemini": gemini.Adapter{}, "rerank": rerank.Adapter{}}
	adapters["simulator"] = provider.ByClientProtocol{OpenAI: adapters["openai"], Anthropic: adapters["anthropic"], Gemini: adapters["gemini"], DefaultBase: "http://" + simLn.Addr().String()}
	ledger := billing.NewLedger(st, log)
	coreSrv := &rpc.CoreServer{Snapshots: holder, Store: st, Deps: &rpc.Deps{
		Adapters: adapters, Counter: tokens.Count, TextCounter: tokens.CountTexts, Ledger: ledger, Log: log, Env: cfg.Env,
		RealtimeMaxSession: cfg.RealtimeMaxSession,
	}}
	prober := &verify.Prober{Adapters: adapters, Env: cfg.Env, Log: log}
	statusCfg, err := cfg.statusFlags()
	if err != nil {
		return fail(err)
	}
	site := newStatusSite(st, holder, prober, statusCfg, log)
	observers := rpc.Observers{rpc.StatusObserver{Recorder: site.rec}}
	if cfg.Observer != nil {
		observers = append(observers, cfg.Observer)
	}
	coreSrv.Deps.Observer = observers
	adminSrv := &admin.Server{Store: st, Snapshots: holder, Verifier: prober, Env: cfg.Env}
	if cfg.CatalogPath != "" {
		if err := applyCatalogFile(ctx, adminSrv, cfg.CatalogPath); err != nil {
			return fail(err)
		}
	}

	tel, err := startTelemetry(ctx, cfg, log, st, holder, ledger, coreSrv)
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { _ = tel.Close(context.Background()) })

	limiter := &rpc.KeyLimiter{Snapshots: holder, Replicas: cfg.Replicas}
	interceptors := []grpc.UnaryServerInterceptor{rpc.AdminStatus(site.rec), rpc.ErrorInterceptor(log), admin.Deadline(admin.DefaultDeadline), limiter.Unary}
	if cfg.AdminToken != "" {
		interceptors = append(interceptors, admin.Auth(cfg.AdminToken))
	}
	// Callers over the socket are clients: internal metadata is for the in-process front only.
	grpcSrv := grpc.NewServer(append(tel.ServerOptions(),
		grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{rpc.ExternalUnary}, interceptors...)...),
		grpc.ChainStreamInterceptor(rpc.ExternalStream, rpc.StreamErrorInterceptor(log), limiter.Stream),
	)...)
	// The front reaches core over an in-process channel: same generated client, same
	// interceptors, no socket, no serialisation. Messages change hands instead of being
	// deep-copied (neither side touches a message after sending it), so a 32 MiB request body
	// or a stream of chunks costs no copies.
	inproc := (&inprocgrpc.Channel{}).
		WithCloner(inprocgrpc.CloneFunc(func(m any) (any, error) { return m, nil })).
		WithServerUnaryInterceptor(rpc.Chain(interceptors...)).
		WithServerStreamInterceptor(rpc.ChainStream(rpc.StreamErrorInterceptor(log), limiter.Stream))
	for _, reg := range []grpc.ServiceRegistrar{grpcSrv, inproc} {
		corev1.RegisterCoreServiceServer(reg, coreSrv)
		catalogv1.RegisterCatalogServiceServer(reg, &rpc.CatalogServer{Snapshots: holder})
		site.register(reg)
		if cfg.AdminToken != "" {
			adminv1.RegisterAdminServiceServer(reg, adminSrv)
		}
	}
	// Streams run core's handler in the HTTP handler's goroutine (rpc.InProcess), and so does
	// Authorize, made before every priced body (rpc.DirectCore); other unary calls go over
	// the in-process channel.
	streams := &rpc.InProcess{Server: coreSrv, Interceptor: rpc.ChainStream(rpc.StreamErrorInterceptor(log), limiter.Stream)}
	fcfg := front.Config{
		Core:         &rpc.DirectCore{CoreServiceClient: corev1.NewCoreServiceClient(inproc), Server: coreSrv, Interceptors: interceptors},
		Generate:     streams.Generate,
		Forward:      streams.Forward,
		Realtime:     streams.Realtime,
		Catalog:      catalogv1.NewCatalogServiceClient(inproc),
		RealtimeIdle: cfg.RealtimeIdle,
		Ready: func(ctx context.Context) error {
			if holder.Current() == nil {
				return errors.New("snapshot not loaded")
			}
			ctx, cancel := context.WithTimeout(ctx, billing.DefaultDBTimeout) // a frozen database: not ready, at once
			defer cancel()
			return st.Pool.Ping(ctx)
		},
		Log: log, Limits: cfg.Limits, AdminSeparate: cfg.AdminHTTPAddr != "",
	}
	if cfg.AdminToken != "" {
		fcfg.Admin = adminv1.NewAdminServiceClient(inproc)
		fcfg.AdminTokenOK = func(token string) bool { return admin.TokenMatches(token, cfg.AdminToken) }
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
	siteHandler, err := site.handler(inproc, statusCfg, httpLn.Addr().String(), handler, log)
	if err != nil {
		return fail(err)
	}
	grpcLn, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fail(fmt.Errorf("listen grpc: %w", err))
	}
	g := &Gateway{
		HTTPAddr: httpLn.Addr().String(), GRPCAddr: grpcLn.Addr().String(),
		Store: st, Snapshots: holder, Admin: adminSrv, Core: fcfg.Core,
		front: handler, httpSrv: newHTTPServer(tel.Handler(siteHandler)),
		tel: tel, MetricsAddr: tel.MetricsAddr,
		grpcSrv: grpcSrv, stop: stop, done: make(chan struct{}), simSrv: simSrv, Status: site.rec, statusDone: site.done, streams: streams,
	}
	if cfg.AdminHTTPAddr != "" {
		adminLn, err := net.Listen("tcp", cfg.AdminHTTPAddr)
		if err != nil {
			return fail(fmt.Errorf("listen admin http: %w", err))
		}
		g.AdminHTTPAddr, g.adminSrv = adminLn.Addr().String(), newHTTPServer(tel.Handler(handler.AdminHandler()))
		go func() { _ = g.adminSrv.Serve(front.WrapListener(adminLn)) }()
	}
	site.run(runCtx)
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
		if err := g.httpSrv.Serve(front.WrapListener(httpLn)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server failed", "err", err)
		}
		<-watchDone
	}()
	for _, w := range admin.SnapshotCredentials(holder.Current(), cfg.Env) {
		log.Warn(w)
	}
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
	if g.adminSrv != nil {
		err = errors.Join(err, g.adminSrv.Shutdown(ctx))
	}
	if ctx.Err() != nil {
		// The drain bound has passed: Shutdown leaves running requests be, so cut them. An
		// answer finished after the ledger closed would be delivered and never charged.
		_ = g.httpSrv.Close()
	}
	cut := make(chan struct{})
	go func() { g.streams.Wait(); close(cut) }()
	select {
	case <-cut: // every in-handler stream has queued its record
	case <-time.After(10 * time.Second):
		err = errors.Join(err, errors.New("streams still running 10 s after they were cut"))
	}
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
	<-g.statusDone
	// Charges are durable before answers end; what is left are records without a charge,
	// retried for the drain time (at least 10 s) in case the database is down right now.
	flushCtx, cancelFlush := context.WithTimeout(context.Background(), max(drain, 10*time.Second))
	defer cancelFlush()
	err = errors.Join(err, g.ledger.Close(flushCtx))
	err = errors.Join(err, g.tel.Close(flushCtx))
	_ = g.simSrv.Close()
	g.Store.Close()
	return err
}

// newHTTPServer bounds what a connection may cost before and between requests: headers
// within 10 s, an idle keep-alive connection closed after 2 minutes. Bodies are paced by the
// front (front.Limits); nothing bounds an answer's total time (spec 6.2).
func newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
}

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
