// Package status is the public status site and documentation front (contract.md, "Status
// site and docs"): the landing page /, the models page /models, /status, the Statuspage v2
// documents under /status/api/v2/, /status/models.json and /docs, server-rendered with
// html/template and one embedded stylesheet, without a key. It reaches core only through the
// generated StatusService and CatalogService clients. Pages carry a strict
// Content-Security-Policy: no script at all, styles only from this origin.
package status

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	catalogv1 "modelgateway/gen/gateway/catalog/v1"
	statusv1 "modelgateway/gen/gateway/status/v1"

	"modelgateway/core/wire/requestid"
)

//go:embed assets/*
var assets embed.FS

// CSP is the Content-Security-Policy of every answer: nothing runs, nothing loads from
// elsewhere, the page cannot be framed.
const CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Config is what the front needs.
type Config struct {
	Status statusv1.StatusServiceClient
	// Catalog is the public catalogue /models shows (the same as GET /v1/catalog).
	Catalog catalogv1.CatalogServiceClient
	// BaseURL is the {base_url} the pages show (GATEWAY_PUBLIC_BASE_URL, else derived from
	// the listener), without a trailing slash.
	BaseURL string
	// BotURL is the chat bot's link (GATEWAY_BOT_URL); the docs say to ask the operator
	// without one.
	BotURL string
	Log    *slog.Logger
}

// Handler serves the site's pages, their JSON and the stylesheet.
type Handler struct {
	cfg   Config
	pages *template.Template
	css   []byte
	mux   *http.ServeMux
}

// New parses the embedded templates.
func New(cfg Config) (*Handler, error) {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	css, err := assets.ReadFile("assets/style.css")
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, pages: pages, css: css, mux: http.NewServeMux()}
	h.mux.HandleFunc("GET /status", h.page)
	h.mux.HandleFunc("GET /status/{$}", h.page)
	h.mux.HandleFunc("GET /status/api/v2/summary.json", h.summary)
	h.mux.HandleFunc("GET /status/api/v2/status.json", h.statuspage(h.statusDoc))
	h.mux.HandleFunc("GET /status/api/v2/components.json", h.statuspage(h.componentsDoc))
	h.mux.HandleFunc("GET /status/api/v2/incidents.json", h.statuspage(h.incidentsDoc))
	h.mux.HandleFunc("GET /status/api/v2/scheduled-maintenances.json", h.statuspage(h.maintenancesDoc))
	h.mux.HandleFunc("GET /status/models.json", h.models)
	h.mux.HandleFunc("GET /status/style.css", h.style)
	h.mux.HandleFunc("GET /docs", h.docs)
	h.mux.HandleFunc("GET /docs/{$}", h.docs)
	h.mux.HandleFunc("GET /{$}", h.home)
	h.mux.HandleFunc("GET /models", h.catalog)
	return h, nil
}

// Paths are the path prefixes the handler serves, for the server's router.
// "/{$}" is the root alone: every other unknown path stays the client routes' 404 envelope.
var Paths = []string{"/status", "/status/", "/docs", "/docs/", "/{$}", "/models"}

// ConfigFromEnv reads the site's settings (contract.md, "Status site and docs"): the public
// base URL (GATEWAY_PUBLIC_BASE_URL, else the client listener httpAddr) and the chat bot's
// link (GATEWAY_BOT_URL).
func ConfigFromEnv(getenv func(string) string, httpAddr string) Config {
	base := getenv("GATEWAY_PUBLIC_BASE_URL")
	if base == "" {
		base = "http://" + httpAddr
	}
	return Config{BaseURL: base, BotURL: getenv("GATEWAY_BOT_URL")}
}

// Before serves Paths with h and everything else with next (the client routes). A clean path
// under /v1/ or /v1beta/ goes to next at once: the mux would hand it there unchanged, after a
// match that cost every API request a few allocations.
func (h *Handler) Before(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	for _, p := range Paths {
		mux.Handle(p, h)
	}
	mux.Handle("/", next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if apiPath(r.URL.Path) && r.Method != http.MethodConnect {
			next.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// apiPath: a path of the client routes that ServeMux would neither clean nor redirect (no
// empty, "." or ".." segment); none of Paths is under these prefixes.
func apiPath(p string) bool {
	return (strings.HasPrefix(p, "/v1/") || strings.HasPrefix(p, "/v1beta/")) &&
		!strings.Contains(p, "//") && !strings.Contains(p, "/.")
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A request id as the client routes assign one: the access log line and a support
	// question about this answer name it. A client's id is kept when it has the allowed form.
	id := strings.TrimSpace(r.Header.Get("X-Request-Id"))
	if id == "" || requestid.CheckClient(id) != nil {
		id = requestid.New()
	}
	w.Header().Set("X-Request-Id", id)
	w.Header().Set("Content-Security-Policy", CSP)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if _, pattern := h.mux.Handler(r); pattern == "" {
		h.fail(w, http.StatusNotFound, "not_found", "no such page: "+r.URL.Path)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) status(r *http.Request) (*statusv1.GetStatusResponse, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	return h.cfg.Status.GetStatus(ctx, &statusv1.GetStatusRequest{})
}

func (h *Handler) fail(w http.ResponseWriter, code int, errCode, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": msg, "type": "service_error", "code": errCode, "request_id": w.Header().Get("X-Request-Id")}})
}

func (h *Handler) unavailable(w http.ResponseWriter, err error) {
	h.cfg.Log.Warn("status site: core not readable", "err", err)
	h.fail(w, http.StatusServiceUnavailable, "unavailable", "the status is not readable right now")
}

func (h *Handler) json(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	// Status tools poll; a few seconds of caching spares the database without hiding much.
	w.Header().Set("Cache-Control", "public, max-age=10")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (h *Handler) summary(w http.ResponseWriter, r *http.Request) {
	st, err := h.status(r)
	if err != nil {
		h.unavailable(w, err)
		return
	}
	h.json(w, summary(st, h.cfg.BaseURL))
}

func (h *Handler) models(w http.ResponseWriter, r *http.Request) {
	st, err := h.status(r)
	if err != nil {
		h.unavailable(w, err)
		return
	}
	h.json(w, models(st))
}

func (h *Handler) style(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(h.css)
}

func (h *Handler) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := h.pages.ExecuteTemplate(&buf, name, data); err != nil {
		h.cfg.Log.Error("status site: render", "page", name, "err", err)
		h.fail(w, http.StatusInternalServerError, "internal_error", "the page could not be rendered")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=10")
	_, _ = w.Write(buf.Bytes())
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	st, err := h.status(r)
	if err != nil {
		h.unavailable(w, err)
		return
	}
	h.render(w, "status.html", pageData(st, h.cfg.BaseURL))
}

func (h *Handler) docs(w http.ResponseWriter, _ *http.Request) {
	h.render(w, "docs.html", docsData{
		BaseURL: h.cfg.BaseURL, WSBaseURL: wsBase(h.cfg.BaseURL), BotURL: h.cfg.BotURL,
		Quickstarts: quickstarts(h.cfg.BaseURL), Auth: Auth, Errors: Errors, Limits: Limits,
		BillingRules: BillingRules, BotCommands: BotCommands,
	})
}

// home is the landing page. It asks core for nothing, so it answers at once and even when
// the database is away.
func (h *Handler) home(w http.ResponseWriter, _ *http.Request) {
	h.render(w, "home.html", homeData{BaseURL: h.cfg.BaseURL, BotURL: h.cfg.BotURL, Quickstarts: quickstarts(h.cfg.BaseURL)})
}

type homeData struct {
	BaseURL, BotURL string
	Quickstarts     []Quickstart
}

func wsBase(base string) string {
	switch {
	case strings.HasPrefix(base, "https://"):
		return "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		return "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base
}

type docsData struct {
	BaseURL, WSBaseURL, BotURL string
	Quickstarts                []Quickstart
	Auth                       []AuthRow
	Errors                     []ErrorRow
	Limits                     []LimitRow
	BillingRules               []string
	BotCommands                []BotCommand
}
