package rpc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/admin"
	"modelgateway/core/billing"
	"modelgateway/core/catalog"
	"modelgateway/core/provider"
	"modelgateway/core/provider/anthropic"
	"modelgateway/core/provider/openai"
	"modelgateway/core/routing"
	"modelgateway/core/simulator"
	"modelgateway/core/snapshot"
	"modelgateway/core/store"
	"modelgateway/core/store/storetest"
	"modelgateway/core/wire/apistatus"
)

// coreCatalog is the catalogue of the core service's own tests: priced generation models on
// an OpenAI-style upstream (the simulator), one that does not stream, one with an explicit
// output limit, one without a price, one per request, and a content-generation model.
const coreCatalog = `
currency: RUB
families: [{id: fam}]
providers:
  - {id: up, kind: openai, base_url: "%s/v1", api_key_env: UP_KEY}
models:
  - id: m-a
    display_name: Model A
    family: fam
    routes: [{endpoint_families: [chat.completions, content.generate, content.count_tokens, content.embed], provider: up, upstream_model: up-gpt}]
    prices: [{endpoint_families: [chat.completions, content.generate], billing_mode: per_token, input: "1", output: "2"}]
  - id: m-b
    family: fam
    streaming: false
    routes: [{endpoint_families: [chat.completions, content.generate], provider: up, upstream_model: up-gpt}]
    prices: [{endpoint_families: [chat.completions, content.generate], billing_mode: per_token, input: "1", output: "2"}]
  - id: m-limited
    family: fam
    output_token_limit: 100
    routes: [{endpoint_families: [chat.completions], provider: up, upstream_model: up-gpt}]
    prices: [{endpoint_families: [chat.completions], billing_mode: per_token, input: "1", output: "2"}]
  - id: m-unpriced
    family: fam
    routes: [{endpoint_families: [chat.completions], provider: up, upstream_model: up-gpt}]
  - id: m-flat
    family: fam
    routes: [{endpoint_families: [chat.completions], provider: up, upstream_model: up-gpt}]
    prices: [{endpoint_families: [chat.completions], billing_mode: per_request, request: "0.25"}]
`

type coreEnv struct {
	st     *store.Store
	holder *snapshot.Holder
	ledger *billing.Ledger
	admin  *admin.Server
	core   corev1.CoreServiceClient
	cat    catalogv1.CatalogServiceClient
}

// coreOptions change what newCoreEnvWith serves.
type coreOptions struct {
	// catalog is a catalogue with one %s, the upstream's address; coreCatalog when empty.
	catalog string
	// upstream answers the providers' calls; the simulator when nil.
	upstream http.Handler
	// env gives the providers' credentials; every one is "up-secret" when nil.
	env func(string) string
	// replicas overrides the replicas sharing the key limits (KeyLimiter.Replicas).
	replicas int
}

// newCoreEnv serves the core and catalogue services over a real socket with the interceptors
// of the gRPC listener, on a throwaway database, against the upstream simulator.
func newCoreEnv(t *testing.T, limiterReplicas int) *coreEnv {
	t.Helper()
	return newCoreEnvWith(t, coreOptions{replicas: limiterReplicas})
}

// newCoreEnvWith is newCoreEnv with another catalogue, upstream or credentials.
func newCoreEnvWith(t *testing.T, o coreOptions) *coreEnv {
	t.Helper()
	ctx := context.Background()
	if o.catalog == "" {
		o.catalog = coreCatalog
	}
	if o.upstream == nil {
		o.upstream = simulator.New(simulator.Options{Words: 3})
	}
	if o.env == nil {
		o.env = func(string) string { return "up-secret" }
	}
	up := httptest.NewServer(o.upstream)
	t.Cleanup(up.Close)
	st, err := store.Open(ctx, storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	doc, err := catalog.Parse(fmt.Appendf(nil, o.catalog, up.URL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ApplyCatalog(ctx, doc); err != nil {
		t.Fatal(err)
	}
	holder, err := snapshot.NewHolder(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ledger := billing.NewLedger(st, log)
	t.Cleanup(func() { ledger.Close(context.Background()) })
	srv := &CoreServer{Snapshots: holder, Store: st, Deps: &Deps{
		Adapters: map[string]provider.Adapter{"openai": openai.Adapter{}, "anthropic": anthropic.Adapter{}}, Ledger: ledger, Log: log,
		Env:     o.env,
		Counter: func(*corev1.GenerateRequest) int64 { return 7 },
		// Each test its own memory of routes and credentials: the process's shared one would
		// carry one test's failures into another's routes of the same name.
		Health: routing.NewHealth(),
	}}
	limiter := &KeyLimiter{Snapshots: holder, Replicas: o.replicas}
	srv.Deps.Limiter = limiter // the token limits, as serve.go wires them
	g := grpc.NewServer(
		grpc.ChainUnaryInterceptor(ExternalUnary, ErrorInterceptor(log), limiter.Unary),
		grpc.ChainStreamInterceptor(ExternalStream, StreamErrorInterceptor(log), limiter.Stream),
	)
	corev1.RegisterCoreServiceServer(g, srv)
	catalogv1.RegisterCatalogServiceServer(g, &CatalogServer{Snapshots: holder})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(ln) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &coreEnv{st: st, holder: holder, ledger: ledger, admin: &admin.Server{Store: st, Snapshots: holder},
		core: corev1.NewCoreServiceClient(conn), cat: catalogv1.NewCatalogServiceClient(conn)}
}

// profile makes a profile with credit (none for "0") and a key allowed the given endpoints
// and models ("*" for all), with per-key limits.
func (e *coreEnv) profile(t *testing.T, credit string, endpoints, models []string, concurrent, rps int32) (secret string, profile uuid.UUID) {
	t.Helper()
	ctx := context.Background()
	p, err := e.admin.CreateProfile(ctx, &adminv1.CreateProfileRequest{DisplayName: "P"})
	if err != nil {
		t.Fatal(err)
	}
	if credit != "0" {
		if _, err := e.admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{Id: p.GetId(), Amount: credit, Reason: "topup", IdempotencyKey: uuid.NewString()}); err != nil {
			t.Fatal(err)
		}
	}
	k, err := e.admin.CreateKey(ctx, &adminv1.CreateKeyRequest{ProfileId: p.GetId(), Name: "k", AllowedEndpoints: endpoints, AllowedModels: models,
		MaxConcurrentRequests: concurrent, MaxRequestsPerSecond: rps})
	if err != nil {
		t.Fatal(err)
	}
	return k.GetSecret(), uuid.MustParse(p.GetId())
}

// as is a context that calls with the key and, when not empty, a request id.
func as(key, requestID string, extra ...string) context.Context {
	kv := append([]string{MetadataAuthorization, "Bearer " + key}, extra...)
	if requestID != "" {
		kv = append(kv, MetadataRequestID, requestID)
	}
	return metadata.AppendToOutgoingContext(context.Background(), kv...)
}

// code is the spec code of an RPC error ("" for none).
func code(err error) string {
	if err == nil {
		return ""
	}
	return apistatus.FromError(err).Code
}

// balance is the profile's ledger balance once n charges have settled, with the invariant
// (balance = sum of entries, never negative) checked.
func (e *coreEnv) balance(t *testing.T, p uuid.UUID, n int) decimal.Decimal {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var bal, sum decimal.Decimal
		var charges int
		if err := e.st.Pool.QueryRow(context.Background(), `
			SELECT p.balance, coalesce(sum(e.amount), 0), count(e.id) FILTER (WHERE e.kind = 'charge')
			FROM profiles p LEFT JOIN ledger_entries e ON e.profile_id = p.id
			WHERE p.id = $1 GROUP BY p.balance`, p).Scan(&bal, &sum, &charges); err != nil {
			t.Fatal(err)
		}
		if !bal.Equal(sum) || bal.IsNegative() {
			t.Fatalf("balance %s, entries %s", bal, sum)
		}
		if charges == n {
			return bal
		}
		if charges > n || time.Now().After(deadline) {
			t.Fatalf("%d charges settled, want %d", charges, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metadataContext is an outgoing context with one metadata pair.
func metadataContext(k, v string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), k, v)
}
