// Package bot is the Telegram bot of contract.md ("Chat bot"): keys, balance, models, usage
// and top-ups for Telegram users. It is a front: it reaches the gateway only through the
// generated admin and catalogue gRPC clients, holds no database connection and no provider
// key, and keeps what must survive a restart (the last handled update, pending
// confirmations, scheduled deletions) in the gateway through the admin API.
package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	tgbot "github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"github.com/shopspring/decimal"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Config is the bot's environment (contract.md); FromEnv reads it.
type Config struct {
	Token        string // TELEGRAM_BOT_TOKEN
	APIURL       string // TELEGRAM_API_URL
	AdminAddr    string // GATEWAY_ADMIN_ADDR
	AdminToken   string // GATEWAY_ADMIN_TOKEN
	Operators    map[int64]bool
	PaymentToken string // TELEGRAM_PAYMENT_PROVIDER_TOKEN
	// StarsRate is the billing currency per Telegram Star (GATEWAY_BOT_STARS_RATE); when set,
	// top-ups are invoiced in Stars (XTR) whatever PaymentToken says. Zero: off.
	StarsRate     decimal.Decimal
	PublicBaseURL string // GATEWAY_PUBLIC_BASE_URL
	// SecretTTL is how long a message holding a secret stays (GATEWAY_BOT_SECRET_TTL, 10m).
	SecretTTL time.Duration
	// PollTimeout is the long-polling timeout of getUpdates (GATEWAY_BOT_POLL_TIMEOUT, 50s).
	PollTimeout time.Duration
	// HealthEvery is the interval of health reports while polling works.
	HealthEvery time.Duration
	// WebhookURL switches from polling to a webhook (GATEWAY_BOT_WEBHOOK_URL) served on
	// WebhookAddr (GATEWAY_BOT_WEBHOOK_ADDR, 127.0.0.1:8081) behind a TLS-terminating proxy.
	WebhookURL  string
	WebhookAddr string
	// KeyLimits are given to every key made through the bot (GATEWAY_BOT_KEY_LIMITS).
	KeyLimits KeyLimits
	// WebAppAddr serves the Mini App (GATEWAY_BOT_WEBAPP_ADDR; off when empty); WebAppURL is
	// its public https address, set as the chats' menu button (GATEWAY_BOT_WEBAPP_URL).
	WebAppAddr string
	WebAppURL  string
}

// FromEnv reads the configuration; getenv is os.Getenv outside tests.
func FromEnv(getenv func(string) string) (*Config, error) {
	or := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	c := &Config{
		Token:         strings.TrimSpace(getenv("TELEGRAM_BOT_TOKEN")),
		APIURL:        strings.TrimRight(or("TELEGRAM_API_URL", "https://api.telegram.org"), "/"),
		AdminAddr:     or("GATEWAY_ADMIN_ADDR", "127.0.0.1:9090"),
		AdminToken:    getenv("GATEWAY_ADMIN_TOKEN"),
		PaymentToken:  getenv("TELEGRAM_PAYMENT_PROVIDER_TOKEN"),
		PublicBaseURL: strings.TrimRight(or("GATEWAY_PUBLIC_BASE_URL", "http://"+or("GATEWAY_HTTP_ADDR", "127.0.0.1:8080")), "/"),
		Operators:     map[int64]bool{},
		HealthEvery:   30 * time.Second,
		WebhookURL:    strings.TrimSpace(getenv("GATEWAY_BOT_WEBHOOK_URL")),
		WebhookAddr:   or("GATEWAY_BOT_WEBHOOK_ADDR", "127.0.0.1:8081"),
		WebAppAddr:    strings.TrimSpace(getenv("GATEWAY_BOT_WEBAPP_ADDR")),
		WebAppURL:     strings.TrimSpace(getenv("GATEWAY_BOT_WEBAPP_URL")),
	}
	if c.Token == "" {
		return nil, errors.New("TELEGRAM_BOT_TOKEN is not set: create a bot with @BotFather and export its token")
	}
	for _, f := range strings.Split(getenv("GATEWAY_BOT_OPERATORS"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("GATEWAY_BOT_OPERATORS: %q is not a Telegram user id", f)
		}
		c.Operators[id] = true
	}
	limits, err := parseKeyLimits(getenv("GATEWAY_BOT_KEY_LIMITS"))
	if err != nil {
		return nil, err
	}
	c.KeyLimits = limits
	if c.WebAppURL != "" {
		u, err := url.Parse(c.WebAppURL)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			// Telegram opens Mini Apps over https only.
			return nil, fmt.Errorf("GATEWAY_BOT_WEBAPP_URL: %q is not an https URL", c.WebAppURL)
		}
	}
	if v := strings.TrimSpace(getenv("GATEWAY_BOT_STARS_RATE")); v != "" {
		r, err := decimal.NewFromString(v)
		if err != nil || !r.IsPositive() {
			return nil, fmt.Errorf("GATEWAY_BOT_STARS_RATE: %q is not a positive decimal (billing currency per Telegram Star)", v)
		}
		c.StarsRate = r
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
		def  time.Duration
	}{{"GATEWAY_BOT_SECRET_TTL", &c.SecretTTL, 10 * time.Minute}, {"GATEWAY_BOT_POLL_TIMEOUT", &c.PollTimeout, 50 * time.Second}} {
		*d.dst = d.def
		if v := getenv(d.name); v != "" {
			x, err := time.ParseDuration(v)
			if err != nil || x <= 0 {
				return nil, fmt.Errorf("%s: %q is not a positive duration", d.name, v)
			}
			*d.dst = x
		}
	}
	return c, nil
}

// Bot handles updates one at a time, in update id order.
type Bot struct {
	cfg    *Config
	log    *slog.Logger
	tg     *telegram
	gw     *gateway
	limits *limiter

	// done is the record of handled updates as saved in the gateway; nil until read.
	done *handled
	// told holds the updates whose user was already told the gateway is unreachable.
	told map[int64]bool

	mu sync.Mutex
	// unscheduled are deletions that could not be recorded yet (gateway down).
	unscheduled []deletion
	lastReport  time.Time
	// hookMu serialises webhook deliveries.
	hookMu sync.Mutex
}

// Run polls Telegram until ctx ends.
func Run(ctx context.Context, cfg *Config, log *slog.Logger) error {
	tg, err := newTelegram(cfg.APIURL, cfg.Token)
	if err != nil {
		return err
	}
	gw, err := dialGateway(cfg.AdminAddr, cfg.AdminToken)
	if err != nil {
		return err
	}
	defer gw.conn.Close()
	b := &Bot{cfg: cfg, log: log, tg: tg, gw: gw, limits: newLimiter(), told: map[int64]bool{}}
	// The deletion loop, the Mini App and the menu button end with the bot, also when the
	// bot stops on an error.
	loopCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); b.deleteLoop(loopCtx) }()
	defer wg.Wait()
	defer stop()
	if cfg.WebAppAddr != "" {
		ln, err := net.Listen("tcp", cfg.WebAppAddr)
		if err != nil {
			return fmt.Errorf("GATEWAY_BOT_WEBAPP_ADDR: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.webApp(loopCtx, ln); err != nil {
				log.Error("mini app stopped", "error", err.Error())
			}
		}()
	}
	if cfg.WebAppURL != "" {
		wg.Add(1)
		go func() { defer wg.Done(); b.setMenuButton(loopCtx) }()
	}
	if cfg.WebhookURL != "" {
		return b.webhook(ctx)
	}
	return b.poll(ctx)
}

// poll is the getUpdates loop. The offset sent to Telegram is the last update handled and
// recorded, so an update received but not handled (gateway down, crash) comes again.
func (b *Bot) poll(ctx context.Context) error {
	var backoff time.Duration
	for ctx.Err() == nil {
		if backoff > 0 {
			_ = sleep(ctx, backoff)
		}
		if b.done == nil {
			h, err := b.gw.handled(ctx)
			if err := misconfigured(err); err != nil {
				return err
			}
			if err != nil {
				b.log.Warn("gateway unreachable: cannot read the last handled update", "error", grpcCode(err))
				backoff = nextBackoff(backoff)
				continue
			}
			b.done = h
			b.log.Info("polling", "offset", h.Last)
		}
		// The offset confirms the last batch. It follows the last update's id down as well
		// as up: after a renumbering, an offset above the new ids would confirm none of them.
		ups, err := b.tg.getUpdates(ctx, b.done.Last+1, b.cfg.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if ae, ok := err.(*apiError); ok && (ae.Code == 401 || ae.Code == 404) {
				return errors.New("Telegram rejects TELEGRAM_BOT_TOKEN (check it with @BotFather)")
			}
			var ae *apiError
			if errors.As(err, &ae) && ae.Code == 429 {
				b.log.Warn("getUpdates rate limited", "retry_after", ae.RetryAfter)
				backoff = retryAfter(ae.RetryAfter)
				continue
			}
			if errors.As(err, &ae) && ae.Code == 409 {
				// A webhook is set (an earlier run in webhook mode): polling needs it removed.
				b.log.Warn("a webhook is set; removing it to poll")
				_ = b.tg.call(ctx, "deleteWebhook", func(ctx context.Context) error {
					_, err := b.tg.api.DeleteWebhook(ctx, &tgbot.DeleteWebhookParams{})
					return err
				})
			}
			b.log.Warn("getUpdates failed", "error", err.Error())
			backoff = nextBackoff(backoff)
			continue
		}
		backoff = 0
		b.polled(ctx)
		for _, u := range ups {
			if b.replay(u) {
				// Confirmed with the batch; the record need not change (it was handled).
				b.done = &handled{Last: u.ID, Recent: b.done.Recent}
				continue
			}
			if !b.handleDurably(ctx, u) {
				return nil
			}
		}
	}
	return nil
}

// misconfigured turns the answers that retrying cannot fix into a start-up error: a wrong
// admin token, or a gateway without the admin API.
func misconfigured(err error) error {
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied:
		return errors.New("the gateway rejects GATEWAY_ADMIN_TOKEN")
	case codes.Unimplemented:
		return errors.New("the gateway at GATEWAY_ADMIN_ADDR does not serve the admin API (is GATEWAY_ADMIN_TOKEN set there, and is it this version?)")
	}
	return nil
}

// nextBackoff doubles from a quarter second to 30 s: a brief failure (a connection reset, a
// gateway restarting) costs the user well under a second, a long outage few calls.
func nextBackoff(d time.Duration) time.Duration {
	switch {
	case d == 0:
		return 250 * time.Millisecond
	case d >= 15*time.Second:
		return 30 * time.Second
	}
	return 2 * d
}

// handleDurably handles an update and records it as handled, retrying with backoff until it
// is; false only when ctx ended first.
func (b *Bot) handleDurably(ctx context.Context, u *models.Update) bool {
	var backoff time.Duration
	for !b.attempt(ctx, u) {
		backoff = nextBackoff(backoff)
		if sleep(ctx, backoff) != nil {
			return false
		}
	}
	return true
}

// replay says whether an update was handled already (Telegram delivering it again, under its
// id or a new one), and logs it when so.
func (b *Bot) replay(u *models.Update) bool {
	if !b.done.seen(fingerprint(u)) {
		return false
	}
	b.log.Info("update", "update_id", u.ID, "outcome", "replay_skipped")
	return true
}

// saveGrace bounds the save of a handled update's record once the bot is stopping.
const saveGrace = 5 * time.Second

// attempt handles an update once and records it as handled; false when it must be tried
// again (the gateway could not be reached or failed), after telling the user once per update.
// Only a recorded update counts as handled: the polling offset and the webhook's 200 wait for
// the record, so an update whose handling did not finish is delivered again.
func (b *Bot) attempt(ctx context.Context, u *models.Update) bool {
	err := b.handle(ctx, u)
	if err == nil {
		next := b.done.with(u.ID, fingerprint(u))
		// The update was handled (its answers sent): the record is saved even when a stop
		// (SIGTERM) comes meanwhile, so that a restarted bot does not handle it again, within
		// a bound, after which it is delivered again as any unrecorded update is.
		save, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveGrace)
		err = b.gw.saveHandled(save, next)
		cancel()
		if err == nil {
			b.done = next
			delete(b.told, u.ID)
			return true
		}
	}
	if ctx.Err() != nil {
		return false
	}
	b.log.Warn("update", "update_id", u.ID, "outcome", "gateway_unavailable", "error", grpcCode(err))
	if chat := chatOf(u); chat != 0 && !b.told[u.ID] {
		b.told[u.ID] = true
		msg := msgUnavailable
		if u.Message != nil && u.Message.SuccessfulPayment != nil {
			// Paying again would pay twice: this one is kept and credited.
			msg = msgPaymentKept
		}
		_, _ = b.tg.send(ctx, chat, msg, nil, false)
	}
	return false
}

// polled reports health after a successful poll, at most every HealthEvery.
func (b *Bot) polled(ctx context.Context) {
	now := time.Now()
	if now.Sub(b.lastReport) < b.cfg.HealthEvery {
		return
	}
	if err := b.reportHealth(ctx, now); err != nil {
		b.log.Warn("health report failed", "error", grpcCode(err))
		return
	}
	b.lastReport = now
}

// chatOf is where a "try again" notice for an update goes; 0 when nowhere.
func chatOf(u *models.Update) int64 {
	switch {
	case u.Message != nil && u.Message.Chat.Type == models.ChatTypePrivate:
		return u.Message.Chat.ID
	case u.CallbackQuery != nil && u.CallbackQuery.Message.Message != nil && u.CallbackQuery.Message.Message.Chat.Type == models.ChatTypePrivate:
		return u.CallbackQuery.Message.Message.Chat.ID
	}
	return 0
}

// Usage is `gateway bot --help`: the environment FromEnv reads, with the defaults it applies.
const Usage = `usage: gateway bot

Runs the Telegram bot. It takes no flags; it reads its environment:

  TELEGRAM_BOT_TOKEN               the bot's token from @BotFather (required)
  TELEGRAM_API_URL                 Bot API base URL (default https://api.telegram.org)
  GATEWAY_ADMIN_ADDR               the gateway's gRPC address (default 127.0.0.1:9090)
  GATEWAY_ADMIN_TOKEN              the gateway's admin token
  GATEWAY_BOT_OPERATORS            comma-separated Telegram user ids allowed /credit, /find, /refund
  TELEGRAM_PAYMENT_PROVIDER_TOKEN  Bot Payments provider token: /topup invoices in the billing
                                   currency through it (when GATEWAY_BOT_STARS_RATE is not set)
  GATEWAY_BOT_STARS_RATE           billing currency per Telegram Star: /topup invoices in Stars (XTR)
  GATEWAY_PUBLIC_BASE_URL          base URL shown in /help and with new keys
                                   (default http://$GATEWAY_HTTP_ADDR)
  GATEWAY_HTTP_ADDR                the gateway's HTTP address (default 127.0.0.1:8080)
  GATEWAY_BOT_WEBHOOK_URL          receive updates on this public URL instead of long polling
  GATEWAY_BOT_WEBHOOK_ADDR         local listener of the webhook (default 127.0.0.1:8081)
  GATEWAY_BOT_WEBAPP_ADDR          serve the Mini App (page and API) on this address (default off)
  GATEWAY_BOT_WEBAPP_URL           the Mini App's public https URL: set as the chats' menu button
  GATEWAY_BOT_SECRET_TTL           how long a message holding a secret stays (default 10m)
  GATEWAY_BOT_POLL_TIMEOUT         getUpdates long-polling timeout (default 50s)
  GATEWAY_BOT_KEY_LIMITS           limits of the keys the bot makes, e.g.
                                   max_requests_per_second=5,max_concurrent_requests=4,max_tokens_per_minute=10000
                                   (default none)
  GATEWAY_LOG_LEVEL                debug, info, warn or error (default info)
`

// Main is `gateway bot`: the environment of contract.md, JSON logs on stderr.
func Main(ctx context.Context, args []string) error {
	return run(ctx, args, os.Stdout)
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help") {
		_, err := io.WriteString(out, Usage)
		return err
	}
	if len(args) > 0 {
		return fmt.Errorf("bot takes no arguments; it reads its environment (gateway bot --help lists it)")
	}
	cfg, err := FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(os.Getenv("GATEWAY_LOG_LEVEL")))
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("component", "bot")
	log.Info("bot starting", "api", redactURL(cfg.APIURL), "gateway", cfg.AdminAddr, "payments", cfg.PaymentToken != "", "stars", !cfg.StarsRate.IsZero(), "operators", len(cfg.Operators))
	return Run(ctx, cfg, log)
}

// redactURL keeps only scheme and host of a URL for the log.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "unparsable"
	}
	return u.Scheme + "://" + u.Host
}
