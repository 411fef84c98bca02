// Package front is the client-facing HTTP surface: request ids, key extraction, body limits,
// the error envelope, and dispatch to grpc-gateway (discovery, admin) or to the hand-written
// protocol handlers. It reaches core only through the generated gRPC clients.
package front

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"

	adminv1 "modelgateway/gen/gateway/admin/v1"
	catalogv1 "modelgateway/gen/gateway/catalog/v1"
	corev1 "modelgateway/gen/gateway/core/v1"

	"modelgateway/core/wire/apierror"
	"modelgateway/core/wire/apistatus"
	"modelgateway/core/wire/requestid"
	"modelgateway/front/batches"
	"modelgateway/front/media"
	"modelgateway/front/relay"
	"modelgateway/front/responses"
)

// Config wires the front to core. Unary calls take the clients (an in-process gRPC channel in
// the binary); the three streaming RPCs run in the HTTP handler's goroutine through
// Generate, Forward and the realtime handler's session func, which the binary takes from one
// core/rpc.InProcess.
type Config struct {
	Core corev1.CoreServiceClient
	// Generate runs core's Generate in process (see relay.GenerateFunc).
	Generate relay.GenerateFunc
	// Forward runs core's Forward in process for the media and ranking routes.
	Forward media.ForwardFunc
	// Realtime serves GET /v1/realtime (a realtime.Handler in the binary); nil: no such route.
	Realtime RealtimeHandler
	Catalog  catalogv1.CatalogServiceClient
	Admin    adminv1.AdminServiceClient // nil when GATEWAY_ADMIN_TOKEN is unset: admin routes are off
	// AdminTokenOK checks a presented admin token (core/admin.TokenMatches against the configured
	// one), so that a wrong one is answered before its body is read; nil leaves the check to
	// core's admin service alone.
	AdminTokenOK func(token string) bool
	// Ready reports whether the process can serve (migrations run, snapshot loaded, database up).
	Ready func(context.Context) error
	Log   *slog.Logger
	// AdminSeparate keeps the admin routes off this handler: they are served by AdminHandler
	// on a listener of their own (GATEWAY_ADMIN_HTTP_ADDR).
	AdminSeparate bool
	// Limits bound what a client can make the front hold; zero values are the defaults.
	Limits Limits
	// FilesMaxBytes bounds an upload to POST /v1/files (GATEWAY_FILES_MAX_BYTES); the
	// default when 0.
	FilesMaxBytes int64
}

// RealtimeHandler serves the realtime WebSocket sessions. The binary hands the front one
// (realtime.Handler), so that the front, which realtime builds on (front/relay), does not
// import realtime back. Upgraded connections are not the HTTP server's to drain: Shutdown
// ends them.
type RealtimeHandler interface {
	http.Handler
	Shutdown(ctx context.Context) error
}

// Server is the HTTP handler.
type Server struct {
	cfg      Config
	coreMux  *runtime.ServeMux
	adminMux *runtime.ServeMux
	gen      *generation
	limits   Limits
	budget   *relay.Budget
	live     LiveTraffic // clients' generation requests (live.go)

	adminFailures *failureLimiter
}

// genMIME selects the camelCase marshaler that the content-generation model objects need;
// every other route speaks snake_case proto names.
const genMIME = "application/x-gen+json"

// maxAdminBody bounds admin request bodies; a catalogue document is the largest of them.
const maxAdminBody = 8 << 20

// New builds the handler.
func New(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Server{cfg: cfg, gen: newGeneration(cfg)}
	s.limits = cfg.Limits.withDefaults()
	s.adminFailures = &failureLimiter{Burst: adminFailureBurst, Every: adminFailureEvery}
	s.budget = &relay.Budget{Total: s.limits.BodyBudget, PerKey: s.limits.KeyBodyBudget, PerProfile: s.limits.ProfileBodyBudget}
	s.coreMux = newGatewayMux(nil)
	if err := corev1.RegisterCoreServiceHandlerClient(ctx, s.coreMux, cfg.Core); err != nil {
		return nil, err
	}
	if err := catalogv1.RegisterCatalogServiceHandlerClient(ctx, s.coreMux, cfg.Catalog); err != nil {
		return nil, err
	}
	if cfg.Admin != nil {
		s.adminMux = newGatewayMux(s.throttleAdminFailure)
		if err := adminv1.RegisterAdminServiceHandlerClient(ctx, s.adminMux, cfg.Admin); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// newGatewayMux builds a grpc-gateway mux; mapErr, when set, may replace the error a call
// returned before it is written.
func newGatewayMux(mapErr func(*http.Request, *apierror.Error) *apierror.Error) *runtime.ServeMux {
	return runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.JSONPb{
			MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
			UnmarshalOptions: protojson.UnmarshalOptions{},
		}),
		runtime.WithMarshalerOption(genMIME, &runtime.JSONPb{}),
		runtime.WithIncomingHeaderMatcher(func(h string) (string, bool) {
			if strings.EqualFold(h, "x-request-id") {
				return "x-request-id", true
			}
			return "", false
		}),
		runtime.WithErrorHandler(func(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
			e := apistatus.FromError(err)
			if mapErr != nil {
				e = mapErr(r, e)
			}
			relay.WriteError(w, r, e)
		}),
		runtime.WithRoutingErrorHandler(func(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, status int) {
			if status == http.StatusMethodNotAllowed {
				relay.WriteError(w, r, apierror.New(apierror.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
				return
			}
			relay.WriteError(w, r, apierror.New(apierror.NotFound, "no route for %s %s", r.Method, r.URL.Path))
		}),
	)
}

// ServeHTTP assigns the request id, then dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(relay.HeaderValue(r.Header, "X-Request-Id"))
	generated := false
	if id == "" {
		id, generated = requestid.New(), true
	} else if apiErr := requestid.CheckClient(id); apiErr != nil {
		// A refused id is not echoed: the answer carries an id of the gateway's own.
		r.Header.Set("X-Request-Id", requestid.New())
		relay.WriteError(w, r, apiErr)
		return
	}
	r = relay.Begin(r, generated)
	relay.SetRequestID(r, w.Header(), id)
	s.route(w, r, true)
}

// ServeInternal serves a request the gateway makes itself - a batch item (core/batchrun) -
// under a request id of the gateway's own making, through the same routes as a client's.
func (s *Server) ServeInternal(w http.ResponseWriter, r *http.Request, requestID string) {
	r = relay.Begin(r, true)
	relay.SetRequestID(r, w.Header(), requestID)
	s.route(w, r, false)
}

// route is the dispatch table. Unknown paths and wrong methods get the envelope too. live: a
// client's request, not a batch item's (LiveTraffic counts the live generation requests).
func (s *Server) route(w http.ResponseWriter, r *http.Request, live bool) {
	googleV1(r) // googlev1.go
	p := r.URL.Path
	if h := s.gen.handler(p); h != nil {
		if live {
			// Counted from before its key is checked: a live request waiting for
			// admission already holds the batch items back.
			s.live.begin()
			defer s.live.end()
		}
		s.serveGeneration(w, r, h)
		return
	}
	switch {
	case p == "/v1/realtime" && s.cfg.Realtime != nil:
		// The realtime front also reads the key from a subprotocol, which browsers must use.
		if key := relay.ExtractKey(r); key != "" {
			relay.SetBearer(r, key)
		}
		s.cfg.Realtime.ServeHTTP(w, r)
	case p == "/healthz":
		s.onlyGET(w, r, s.healthz)
	case p == "/readyz":
		s.onlyGET(w, r, s.readyz)
	case strings.HasPrefix(p, "/admin/v1/") && !s.cfg.AdminSeparate:
		s.serveAdmin(w, r)
	case batches.Serves(p):
		(&batches.Handler{Core: s.cfg.Core, MaxFileBytes: s.cfg.FilesMaxBytes}).ServeHTTP(w, r)
	case strings.HasPrefix(p, responses.StoredPrefix):
		(&responses.StoredHandler{Core: s.cfg.Core}).ServeHTTP(w, r)
	case p == "/v1/catalog":
		s.onlyGET(w, r, s.catalog)
	case p == "/v1/models", strings.HasPrefix(p, "/v1/models/"), p == "/v1/balance", p == "/v1/key",
		p == "/v1beta/chat-compat/models", p == "/v1beta/openai/models":
		s.onlyGET(w, r, s.discovery)
	case p == "/v1beta/models", strings.HasPrefix(p, "/v1beta/models/"):
		s.onlyGET(w, r, func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set("Accept", genMIME)
			s.discovery(w, r)
		})
	default:
		relay.WriteError(w, r, apierror.New(apierror.NotFound, "no route for %s %s", r.Method, p))
	}
}

func (s *Server) onlyGET(w http.ResponseWriter, r *http.Request, h http.HandlerFunc) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		relay.WriteError(w, r, apierror.New(apierror.MethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
		return
	}
	h(w, r)
}

// discovery hands an authenticated GET to grpc-gateway with the key normalised into the one
// place core reads it from.
func (s *Server) discovery(w http.ResponseWriter, r *http.Request) {
	key := relay.ExtractKey(r)
	if key == "" {
		relay.WriteError(w, r, apierror.New(apierror.InvalidKey, "no API key was provided"))
		return
	}
	relay.SetBearer(r, key)
	s.coreMux.ServeHTTP(w, r)
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		if err := s.cfg.Ready(r.Context()); err != nil {
			relay.WriteError(w, r, apierror.New(apierror.Unavailable, "not ready: %v", err))
			return
		}
	}
	s.healthz(w, r)
}

// Shutdown ends the realtime sessions (close frames sent) within ctx; http.Server.Shutdown
// does not know about upgraded connections.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.cfg.Realtime == nil {
		return nil
	}
	return s.cfg.Realtime.Shutdown(ctx)
}

// BodyBudget is the replica's budget of request bodies in memory (for tests and metrics).
func (s *Server) BodyBudget() *relay.Budget { return s.budget }
