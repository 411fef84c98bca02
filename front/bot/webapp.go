package bot

// The Mini App (contract.md "Chat bot"): a page and its JSON API on GATEWAY_BOT_WEBAPP_ADDR,
// served by the bot process, which stays a client of the admin API and nothing else. Every API
// call carries Telegram's initData (`Authorization: tma <initData>`), checked on every call;
// the user is the one initData names, never one a request body or path names.

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	adminv1 "modelgateway/gen/gateway/admin/v1"
)

//go:embed webapp
var webappFiles embed.FS

// webAppDays is how far back the Mini App's charts look: today and the 29 days before, UTC.
const webAppDays = 30

// webAppCSP lets the page load only itself and Telegram's script (which is how a Mini App
// talks to the client: theme, invoices, the back button); the charts are inline SVG drawn by
// the page's own script.
const webAppCSP = "default-src 'none'; script-src 'self' https://telegram.org; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'"

// webApp serves the Mini App on ln until ctx ends.
func (b *Bot) webApp(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: b.webAppHandler(time.Now), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	b.log.Info("mini app serving", "listen", ln.Addr().String())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mini app: %w", err)
	}
	return nil
}

// setMenuButton makes the Mini App the menu button of every private chat with the bot
// (setChatMenuButton without chat_id sets the default), retrying while Telegram fails.
func (b *Bot) setMenuButton(ctx context.Context) {
	var backoff time.Duration
	for ctx.Err() == nil {
		err := b.tg.call(ctx, "setChatMenuButton", func(ctx context.Context) error {
			_, err := b.tg.api.SetChatMenuButton(ctx, &tgbot.SetChatMenuButtonParams{MenuButton: models.MenuButtonWebApp{
				Type: models.MenuButtonTypeWebApp, Text: "Keys & usage", WebApp: models.WebAppInfo{URL: b.cfg.WebAppURL},
			}})
			return err
		})
		if err == nil {
			b.log.Info("menu button set to the mini app")
			return
		}
		b.log.Warn("setChatMenuButton failed", "error", err.Error())
		backoff = nextBackoff(backoff)
		if sleep(ctx, backoff) != nil {
			return
		}
	}
}

// webAppHandler is the page, its assets and the API; now is the clock initData is checked by.
func (b *Bot) webAppHandler(now func() time.Time) http.Handler {
	static, _ := fs.Sub(webappFiles, "webapp")
	mux := http.NewServeMux()
	page := func(name, ctype string) http.HandlerFunc {
		raw, err := fs.ReadFile(static, name)
		if err != nil {
			panic(err) // embedded at build time
		}
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.Header().Set("Cache-Control", "no-cache")
			_, _ = w.Write(raw)
		}
	}
	mux.Handle("GET /{$}", page("index.html", "text/html; charset=utf-8"))
	mux.Handle("GET /app.js", page("app.js", "text/javascript; charset=utf-8"))
	mux.Handle("GET /app.css", page("app.css", "text/css; charset=utf-8"))
	api := func(pattern string, h func(*apiCall) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { b.serveAPI(w, r, now, pattern, h) })
	}
	api("GET /api/me", b.apiMe)
	api("GET /api/usage", b.apiUsage)
	api("GET /api/models", b.apiModels)
	api("POST /api/keys", b.apiCreateKey)
	api("PATCH /api/keys/{id}", b.apiUpdateKey)
	api("POST /api/keys/{id}/revoke", b.apiRevokeKey)
	api("POST /api/keys/{id}/rotate", b.apiRotateKey)
	api("POST /api/topup", b.apiTopUp)
	api("GET /api/batches", b.apiBatches) // batches.go
	return securityHeaders(mux)
}

func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", webAppCSP)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// apiCall is one authenticated API request.
type apiCall struct {
	ctx     context.Context
	r       *http.Request
	user    *webAppUser
	profile *adminv1.Profile
}

// apiError is an answer other than 200, with a message for the page to show.
type apiErr struct {
	status int
	msg    string
}

func (e *apiErr) Error() string { return e.msg }

func refuse(code int, format string, args ...any) error {
	return &apiErr{code, fmt.Sprintf(format, args...)}
}

// serveAPI authenticates a call by its initData, finds (or makes) the user's profile, runs
// the handler and writes its JSON. Logged: the route, the status and the outcome; never the
// initData, a secret or a body.
func (b *Bot) serveAPI(w http.ResponseWriter, r *http.Request, now func() time.Time, route string, h func(*apiCall) (any, error)) {
	w.Header().Set("Cache-Control", "no-store")
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	out, err := func() (any, error) {
		raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "tma ")
		if !ok {
			return nil, refuse(http.StatusUnauthorized, "Open this page from the bot's menu button in Telegram.")
		}
		u, err := verifyInitData(raw, b.cfg.Token, now())
		if err != nil {
			return nil, refuse(http.StatusUnauthorized, "Telegram's sign-in data is invalid or expired; close and reopen the app.")
		}
		p, err := b.gw.profile(ctx, u.ID, u.name())
		if err != nil {
			return nil, err
		}
		return h(&apiCall{ctx: ctx, r: r, user: u, profile: p})
	}()
	code := http.StatusOK
	if err != nil {
		var ae *apiErr
		switch {
		case errors.As(err, &ae):
			code, out = ae.status, map[string]any{"error": map[string]string{"message": ae.msg}}
		default:
			code, out = grpcHTTP(err)
		}
		if code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", "tma")
		}
	}
	if code >= 500 || code == http.StatusUnauthorized {
		why := grpcCode(err)
		if ae := (*apiErr)(nil); errors.As(err, &ae) {
			why = "refused"
		}
		b.log.Warn("mini app", "route", route, "status", code, "error", why)
	} else {
		b.log.Info("mini app", "route", route, "status", code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(out)
}

// grpcHTTP turns a gateway error into a status and a message the page can show.
func grpcHTTP(err error) (int, any) {
	msg := func(s string) any { return map[string]any{"error": map[string]string{"message": s}} }
	s := status.Convert(err)
	switch s.Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return http.StatusServiceUnavailable, msg("The gateway cannot be reached right now; please try again in a minute.")
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.AlreadyExists:
		return http.StatusBadRequest, msg(s.Message())
	case codes.NotFound:
		return http.StatusNotFound, msg("Not found.")
	}
	return http.StatusBadGateway, msg("That did not work (" + s.Code().String() + "). Please try again later.")
}

// decode reads a small JSON body.
func decode(r *http.Request, v any) error {
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(v); err != nil {
		return refuse(http.StatusBadRequest, "The request body is not valid JSON.")
	}
	return nil
}
