package bot

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// webhook receives updates on GATEWAY_BOT_WEBHOOK_ADDR instead of polling. An update is
// answered 200 once handled and recorded; until then (the gateway unreachable or failing) it
// is answered 503, and Telegram delivers it again later. One update at a time
// (max_connections 1), so updates stay in order; redeliveries are recognised by content as in
// polling, whatever their id.
func (b *Bot) webhook(ctx context.Context) error {
	u, err := url.Parse(b.cfg.WebhookURL)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return errors.New("GATEWAY_BOT_WEBHOOK_URL is not an absolute URL")
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return err
	}
	secret := hex.EncodeToString(buf)
	ln, err := net.Listen("tcp", b.cfg.WebhookAddr)
	if err != nil {
		return fmt.Errorf("webhook listener: %w", err)
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) { b.serveWebhook(ctx, w, r, secret) })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	// The record of handled updates is read before Telegram is told where to deliver.
	for {
		h, err := b.gw.handled(ctx)
		if err := misconfigured(err); err != nil {
			return err
		}
		if err == nil {
			b.hookMu.Lock()
			b.done = h
			b.hookMu.Unlock()
			break
		}
		b.log.Warn("gateway unreachable: cannot read the last handled update", "error", grpcCode(err))
		if sleep(ctx, 2*time.Second) != nil {
			return nil
		}
	}
	for {
		err := b.tg.call(ctx, "setWebhook", func(ctx context.Context) error {
			_, err := b.tg.api.SetWebhook(ctx, &tgbot.SetWebhookParams{URL: b.cfg.WebhookURL, MaxConnections: 1, AllowedUpdates: allowedUpdates, SecretToken: secret})
			return err
		})
		if err == nil {
			break
		}
		b.log.Warn("setWebhook failed", "error", err.Error())
		if sleep(ctx, 5*time.Second) != nil {
			return nil
		}
	}
	b.log.Info("webhook set", "listen", ln.Addr().String())
	// Health: Telegram's own view of the webhook, checked every HealthEvery.
	for {
		info, err := b.webhookInfo(ctx)
		switch {
		case err != nil:
			b.log.Warn("getWebhookInfo failed", "error", err.Error())
		case info.URL != b.cfg.WebhookURL:
			b.log.Warn("the webhook was replaced or removed")
		case info.LastErrorDate != 0 && time.Since(time.Unix(int64(info.LastErrorDate), 0)) < b.cfg.HealthEvery:
			b.log.Warn("Telegram reports webhook delivery errors", "pending", info.PendingUpdateCount)
		default:
			b.polled(ctx)
		}
		if sleep(ctx, min(b.cfg.HealthEvery, 30*time.Second)) != nil {
			return nil
		}
	}
}

func (b *Bot) webhookInfo(ctx context.Context) (*models.WebhookInfo, error) {
	var info *models.WebhookInfo
	err := b.tg.call(ctx, "getWebhookInfo", func(ctx context.Context) error {
		var err error
		info, err = b.tg.api.GetWebhookInfo(ctx)
		return err
	})
	return info, err
}

func (b *Bot) serveWebhook(ctx context.Context, w http.ResponseWriter, r *http.Request, secret string) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Telegram-Bot-Api-Secret-Token")), []byte(secret)) != 1 {
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	var u models.Update
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&u); err != nil {
		http.Error(w, "bad update", http.StatusBadRequest)
		return
	}
	b.hookMu.Lock()
	defer b.hookMu.Unlock()
	if b.done == nil || ctx.Err() != nil {
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	if b.replay(&u) {
		w.WriteHeader(http.StatusOK)
		return
	}
	if !b.attempt(ctx, &u) {
		http.Error(w, "gateway unreachable", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}
