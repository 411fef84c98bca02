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
	statusv1 "modelgateway/gen/gateway/status/v1"

	"modelgateway/core/admin"
	"modelgateway/core/billing"
	"modelgateway/core/fx"
	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/gemini"
	"modelgateway/core/provider/openai"
	"modelgateway/core/provider/rerank"
	"modelgateway/core/residency"
	"modelgateway/core/routing"
	"modelgateway/core/rpc"
	"modelgateway/core/simulator"
	"modelgateway/core/snapshot"
	"modelgateway/core/statusdata"
	"modelgateway/core/statusdata/outcome"
	"modelgateway/core/store"
	"modelgateway/core/telemetry"
	"modelgateway/core/tokens"
	"modelgateway/core/verify"
	"modelgateway/core/version"
	"modelgateway/front"
	"modelgateway/front/h1"
	"modelgateway/front/status"
	"modelgateway/realtime"
)

func cmdServe(ctx context.Context, args []string) error {
	sampleNoHeapProfile()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := configFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	g, err := Start(ctx, cfg, slog.Default())
	if err != nil {
		return err
	}
	residency.AfterStartup(slog.Default()) // the start-up touched most of the binary
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
	httpSrv httpServer
	grpcSrv *grpc.Server
	simSrv  *http.Server
	ledger  *billing.Ledger
	// closed when the ledger's background loop has stopped
	ledgerDone chan struct{}
	statusDone <-chan struct{}
	tel        *telemetry.Telemetry
	stop       context.CancelFunc
	done       chan struct{}

	// adminSrv serves GATEWAY_ADMIN_HTTP_ADDR; nil when the admin routes share httpSrv
	adminSrv *http.Server
	// streams are the calls core runs in HTTP handlers: after the drain bound they are cut,
	// and the ledger closes only once they have queued their records.
	streams *rpc.InProcess
	// batchStop stops the batch runner claiming items; batchDone closes when its items have
	// ended.
	batchStop func()
	batchDone chan struct{}
	// the bound listeners, served from the end of Start
	httpLn, grpcLn net.Listener
	log            *slog.Logger
	// cut is how many streams were still running at the drain bound
	cut int64
}

// Start migrates, loads the snapshot and serves; it returns once both listeners are bound.
func Start(ctx context.Context, cfg *Config, log *slog.Logger) (*Gateway, error) {
	if cfg.DatabaseURL == "" {
		return nil, errors.New("DATABASE_URL is not set: serve needs a PostgreSQL database (make run provides one)")
	}
	if cfg.HTTPServer == "" {
		// A Config built in code (tests, benchmarks) still takes the environment's choice,
		// so that a whole test or benchmark run can be repeated on net/http.
		cfg.HTTPServer = os.Getenv("GATEWAY_HTTP_SERVER")
	}
	if k := cfg.HTTPServer; k != "" && k != "lean" && k != "net" {
		return nil, fmt.Errorf("GATEWAY_HTTP_SERVER is %q: it takes lean or net", k)
	}
	if err := store.Migrate(ctx, cfg.DatabaseURL); err != nil {
		return nil, err
	}
	if cfg.Step != nil {
		cfg.Step("migrations")
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	w := &wiring{cfg: cfg, log: log, st: st}
	g, err := w.start(ctx)
	if err != nil {
		for _, c := range slices.Backward(w.closers) {
			c()
		}
		st.Close()
		return nil, err
	}
	return g, nil
}

// wiring is a gateway while Start puts it together, one part after another: core, the gRPC
// server and channel, the fronts, the listeners. closers undo what a failed Start has begun.
type wiring struct {
	cfg     *Config
	log     *slog.Logger
	st      *store.Store
	closers []func()

	holder  *snapshot.Holder
	simSrv  *http.Server
	ledger  *billing.Ledger
	coreSrv *rpc.CoreServer
	site    *statusdata.Site
	admin   *admin.Server
	tel     *telemetry.Telemetry

	limiter        *rpc.KeyLimiter
	authorizeChain []grpc.UnaryServerInterceptor // DirectCore's (unaryChain.authorize)
	grpcSrv        *grpc.Server
	inproc         *inprocgrpc.Channel
	streams        *rpc.InProcess
}

func (w *wiring) start(ctx context.Context) (*Gateway, error) {
	if err := w.startCore(ctx); err != nil {
		return nil, err
	}
	w.serveGRPC()
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	w.closers = append(w.closers, stop)
	fcfg := w.frontConfig()
	handler, err := front.New(runCtx, fcfg)
	if err != nil {
		return nil, err
	}
	g, err := w.listen(handler, fcfg.Core, stop)
	if err != nil {
		return nil, err
	}
	w.run(runCtx, g)
	return g, nil
}

// startCore makes core: the snapshot, the provider adapters, the ledger, the status site's
// core half, the admin service (applying the catalogue file), and the telemetry.
func (w *wiring) startCore(ctx context.Context) error {
	cfg, st, log := w.cfg, w.st, w.log
	holder, err := snapshot.NewHolder(ctx, st)
	if err != nil {
		return err
	}
	holder.Log = log
	adapters, err := w.startSimulator()
	if err != nil {
		return err
	}
	ledger := billing.NewLedger(st, log)
	coreSrv := &rpc.CoreServer{Snapshots: holder, Store: st, Deps: &rpc.Deps{
		Adapters: adapters, Counter: tokens.Count, TextCounter: tokens.CountTexts, Ledger: ledger, Log: log, Env: cfg.Env,
		RealtimeMaxSession: cfg.RealtimeMaxSession, ResponsesTTL: cfg.ResponsesTTL,
		Batches: cfg.Batches,
		Health:  routing.NewHealth(), // this replica's memory of its upstreams
	}}
	prober := &verify.Prober{Adapters: adapters, Env: cfg.Env, Log: log}
	probeInterval, err := statusdata.ProbeIntervalFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	site := statusdata.NewSite(statusdata.SiteConfig{Store: st, Snapshots: holder.Current, Prober: prober, ProbeInterval: probeInterval, Log: log,
		SetAside: coreSrv.Deps.Health.SetAside})
	observers := rpc.Observers{outcome.Observer{Recorder: site.Recorder}}
	if cfg.Observer != nil {
		observers = append(observers, cfg.Observer)
	}
	coreSrv.Deps.Observer = observers
	adminSrv := &admin.Server{Store: st, Snapshots: holder, Verifier: prober, Env: cfg.Env}
	if cfg.CatalogPath != "" {
		if err := applyCatalogFile(ctx, adminSrv, cfg.CatalogPath); err != nil {
			return err
		}
	}

	tel, err := startTelemetry(ctx, cfg, log, st, holder, ledger, coreSrv)
	if err != nil {
		return err
	}
	w.closers = append(w.closers, func() { _ = tel.Close(context.Background()) })
	w.holder, w.ledger, w.coreSrv, w.site, w.admin, w.tel = holder, ledger, coreSrv, site, adminSrv, tel
	return nil
}

// startSimulator serves the built-in simulator, which serves providers of kind "simulator"
// that name no base_url, and returns the adapters of every provider kind.
func (w *wiring) startSimulator() (map[string]provider.Adapter, error) {
	simLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen simulator: %w", err)
	}
	simSrv := &http.Server{Handler: simulator.New(simulator.Options{}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = simSrv.Serve(simLn) }()
	w.closers = append(w.closers, func() { _ = simSrv.Close() })
	w.simSrv = simSrv
	adapters := map[string]provider.Adapter{"openai": openai.Adapter{}, "anthropic": anthropic.Adapter{}, "gemini": gemini.Adapter{}, "rerank": rerank.Adapter{}}
	adapters["simulator"] = provider.ByClientProtocol{OpenAI: adapters["openai"], Anthropic: adapters["anthropic"], Gemini: adapters["gemini"], DefaultBase: "http://" + simLn.Addr().String()}
	return adapters, nil
}

// serveGRPC makes the gRPC server of the socket and the in-process channel of the fronts,
// both with core's services behind the same interceptors.
func (w *wiring) serveGRPC() {
	cfg, log := w.cfg, w.log
	// Each replica's share of a key's limits follows the live replicas the database records;
	// GATEWAY_REPLICAS, when set, overrides the count.
	limiter := &rpc.KeyLimiter{Snapshots: w.holder, Replicas: cfg.Replicas, Live: w.ledger.LiveReplicas}
	w.coreSrv.Deps.Limiter = limiter
	chain := newUnaryChain(w.site.Recorder, log, limiter, cfg.AdminToken)
	interceptors := chain.all()
	// Callers over the socket are clients: internal metadata is for the in-process front only.
	grpcSrv := grpc.NewServer(append(w.tel.ServerOptions(),
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
		corev1.RegisterCoreServiceServer(reg, w.coreSrv)
		catalogv1.RegisterCatalogServiceServer(reg, &rpc.CatalogServer{Snapshots: w.holder})
		w.site.Register(reg)
		if cfg.AdminToken != "" {
			adminv1.RegisterAdminServiceServer(reg, w.admin)
		}
	}
	// Streams run core's handler in the HTTP handler's goroutine (rpc.InProcess), and so does
	// Authorize, made before every priced body (rpc.DirectCore); other unary calls go over
	// the in-process channel.
	// (rpc.InProcess makes the checks of the socket's stream chain after ExternalStream,
	// StreamErrorInterceptor's and the limiter's, as direct calls.)
	w.streams = &rpc.InProcess{Server: w.coreSrv, Log: log, Limiter: limiter}
	w.limiter, w.authorizeChain, w.grpcSrv, w.inproc = limiter, chain.authorize(), grpcSrv, inproc
}

// frontConfig wires the client front to core over the in-process channel.
func (w *wiring) frontConfig() front.Config {
	cfg, st, holder, inproc := w.cfg, w.st, w.holder, w.inproc
	fcfg := front.Config{
		Core:     &rpc.DirectCore{CoreServiceClient: corev1.NewCoreServiceClient(inproc), Server: w.coreSrv, Interceptors: w.authorizeChain},
		Generate: w.streams.Generate,
		Forward:  w.streams.Forward,
		Realtime: &realtime.Handler{Realtime: w.streams.Realtime, IdleTimeout: cfg.RealtimeIdle},
		Catalog:  catalogv1.NewCatalogServiceClient(inproc),
		Ready: func(ctx context.Context) error {
			if holder.Current() == nil {
				return errors.New("snapshot not loaded")
			}
			ctx, cancel := context.WithTimeout(ctx, billing.DefaultDBTimeout) // a frozen database: not ready, at once
			defer cancel()
			return st.Pool.Ping(ctx)
		},
		Log: w.log, Limits: cfg.Limits, AdminSeparate: cfg.AdminHTTPAddr != "",
		FilesMaxBytes: cfg.Batches.FilesMaxBytes,
	}
	if cfg.AdminToken != "" {
		fcfg.Admin = adminv1.NewAdminServiceClient(inproc)
		fcfg.AdminTokenOK = func(token string) bool { return admin.TokenMatches(token, cfg.AdminToken) }
	}
	return fcfg
}

// listen binds the client HTTP listener (the status site in front of the client routes),
// the gRPC listener and, when set, the admin HTTP listener.
func (w *wiring) listen(handler *front.Server, core corev1.CoreServiceClient, stop context.CancelFunc) (*Gateway, error) {
	cfg := w.cfg
	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen http: %w", err)
	}
	w.closers = append(w.closers, func() { httpLn.Close() })
	statusCfg := status.ConfigFromEnv(os.Getenv, httpLn.Addr().String())
	statusCfg.Status, statusCfg.Log = statusv1.NewStatusServiceClient(w.inproc), w.log
	statusCfg.Catalog = catalogv1.NewCatalogServiceClient(w.inproc)
	site, err := status.New(statusCfg)
	if err != nil {
		return nil, err
	}
	grpcLn, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return nil, fmt.Errorf("listen grpc: %w", err)
	}
	g := &Gateway{
		HTTPAddr: httpLn.Addr().String(), GRPCAddr: grpcLn.Addr().String(),
		Store: w.st, Snapshots: w.holder, Admin: w.admin, Core: core,
		front: handler, httpSrv: newClientServer(cfg.HTTPServer, w.tel.Handler(site.Before(handler))),
		tel: w.tel, MetricsAddr: w.tel.MetricsAddr,
		grpcSrv: w.grpcSrv, stop: stop, done: make(chan struct{}), simSrv: w.simSrv, Status: w.site.Recorder, statusDone: w.site.Done(), streams: w.streams,
		httpLn: httpLn, grpcLn: grpcLn, log: w.log,
	}
	if cfg.AdminHTTPAddr != "" {
		adminLn, err := net.Listen("tcp", cfg.AdminHTTPAddr)
		if err != nil {
			return nil, fmt.Errorf("listen admin http: %w", err)
		}
		g.AdminHTTPAddr, g.adminSrv = adminLn.Addr().String(), newHTTPServer(w.tel.Handler(handler.AdminHandler()))
		go func() { _ = g.adminSrv.Serve(front.WrapListener(adminLn)) }()
	}
	return g, nil
}

// run starts the background loops (status counts, snapshot watcher, ledger, FX) and serves
// the bound listeners until Shutdown.
func (w *wiring) run(runCtx context.Context, g *Gateway) {
	cfg, holder, log := w.cfg, w.holder, w.log
	w.site.Run(runCtx)
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); holder.Run(runCtx, cfg.DatabaseURL) }()
	ledgerDone := make(chan struct{})
	go func() { defer close(ledgerDone); w.ledger.Run(runCtx) }()
	if cfg.FxURL != "" {
		f := &fx.Fetcher{URL: cfg.FxURL, Interval: cfg.FxInterval, Store: w.st,
			BillingCurrency: func() string { return holder.Current().Currency }, Log: log.With("component", "fx")}
		go f.Run(runCtx)
	}
	g.ledger, g.ledgerDone = w.ledger, ledgerDone
	go rpc.PurgeStoredResponses(runCtx, w.st, rpc.DefaultResponsesPurgeEvery, log.With("component", "stored_responses"))
	g.batchStop, g.batchDone = startBatches(w.st, g.front, g.tel, g.ledger, cfg.BatchConcurrency, cfg.BatchLease, w.log)
	go func() { _ = g.grpcSrv.Serve(g.grpcLn) }()
	go func() {
		defer close(g.done)
		if err := g.httpSrv.Serve(front.WrapListener(g.httpLn)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server failed", "err", err)
		}
		<-watchDone
	}()
	for _, warning := range admin.SnapshotCredentials(holder.Current(), cfg.Env) {
		log.Warn(warning)
	}
	v := version.Get()
	log.Info("gateway serving", "version", v.Version, "commit", v.Commit, "http", g.HTTPAddr, "grpc", g.GRPCAddr,
		"admin_http", g.AdminHTTPAddr, "metrics", g.MetricsAddr, "admin_api", cfg.AdminToken != "")
}

// Shutdown stops accepting, drains in-flight requests and streams within the bound, then
// releases the database. A line says it begins and one what it drained in how long.
func (g *Gateway) Shutdown(drain time.Duration) error {
	start, running := time.Now(), g.streams.Running()
	g.log.Info("gateway draining", "streams", running, "drain_timeout", drain)
	err := g.shutdown(drain)
	g.log.Info("gateway stopped", "streams_drained", running-g.cut, "streams_cut", g.cut,
		"took", time.Since(start).Round(time.Millisecond).String(), "err", err)
	return err
}

func (g *Gateway) shutdown(drain time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	g.batchStop() // no new batch item starts; those running finish below
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
		g.cut = g.streams.Running()
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
	select {
	case <-g.batchDone: // every batch item running has recorded its result
	case <-ctx.Done():
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

// httpServer is what the gateway asks of the client listener's server: net/http's or front/h1's.
type httpServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// newClientServer is the client listener's server (GATEWAY_HTTP_SERVER): front/h1 unless
// kind is "net". front/h1 serves the same handler with newHTTPServer's bounds at less CPU per
// request (no per-request goroutine hand-offs beyond the disconnect watch, reused request
// and header state); what it does not speak it hands to net/http. The admin listener stays
// on net/http: it is not on the request path.
func newClientServer(kind string, h http.Handler) httpServer {
	if kind == "net" {
		return newHTTPServer(h)
	}
	return &h1.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
}
