package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	adminv1 "modelgateway/gen/gateway/admin/v1"

	"modelgateway/core/catalog"
	"modelgateway/core/simulator"
	"modelgateway/core/store"
	"modelgateway/core/store/pgcluster"
)

// cmdDev is `make run`: everything a newcomer needs on a fresh machine, idempotent on re-run.
// It prints a line per start-up step with its duration (the Makefile prints the build's), so
// that a first start that takes a while says what it is doing.
func cmdDev(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	cfg := configFlags(fs)
	dataDir := fs.String("data", ".data", "directory for the local PostgreSQL cluster and demo secrets")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dataDir, 0o755); err != nil {
		return err
	}
	clock := newPhases(os.Stdout)
	pgNote, err := devDatabase(ctx, cfg, *dataDir, clock)
	if err != nil {
		return err
	}
	// The demo providers name this variable; the simulator ignores its value. Set, it keeps
	// the unset-credential warning for real providers only.
	if os.Getenv(demoKeyEnv) == "" {
		_ = os.Setenv(demoKeyEnv, "simulator")
	}
	sim, err := simulator.StartDemo(ctx)
	if err != nil {
		return err
	}
	cfg.Step = func(step string) {
		if step == "migrations" {
			clock.lap("database migrations applied")
		}
	}
	g, err := Start(ctx, cfg, slog.Default())
	if err != nil {
		return err
	}
	clock.lap("gateway listening on " + g.HTTPAddr)
	secret, err := seedDemo(ctx, g, sim, filepath.Join(*dataDir, "demo-key"))
	if err != nil {
		_ = g.Shutdown(cfg.DrainTimeout)
		return err
	}
	fxNote := "  FX rates: from " + cfg.FxURL
	if cfg.FxURL == "" {
		if err := seedDemoFX(ctx, g); err != nil {
			_ = g.Shutdown(cfg.DrainTimeout)
			return err
		}
		fxNote = "  FX rates: demo values (not real; set GATEWAY_FX_URL or call SetFxRates for real ones)"
	}
	clock.lap("demo catalogue, profile, key and FX rates loaded")
	clock.total("ready")
	printDevBanner(g, sim, secret, cfg.AdminToken, fxNote, pgNote)
	<-ctx.Done()
	return g.Shutdown(cfg.DrainTimeout)
}

// phases prints `make run`'s progress: one line per step, with how long it took since the
// step before.
type phases struct {
	w           io.Writer
	start, last time.Time
}

func newPhases(w io.Writer) *phases {
	now := time.Now()
	return &phases{w: w, start: now, last: now}
}

// lap ends a step.
func (p *phases) lap(what string) {
	now := time.Now()
	fmt.Fprintf(p.w, "run: %-58s %6.2fs\n", what, now.Sub(p.last).Seconds())
	p.last = now
}

// total says how long all the steps took together.
func (p *phases) total(what string) {
	fmt.Fprintf(p.w, "run: %-58s %6.2fs\n", what+" (all steps since the gateway process started)", time.Since(p.start).Seconds())
}

// devDatabase starts the local PostgreSQL cluster when no DATABASE_URL is given, and keeps
// the admin token in dataDir when none is; the note says where the cluster's data went when
// it is not under dataDir.
func devDatabase(ctx context.Context, cfg *Config, dataDir string, clock *phases) (pgNote string, err error) {
	if cfg.DatabaseURL == "" {
		dir, moved, err := devPGDir(dataDir) // devdata.go
		if err != nil {
			return "", err
		}
		if moved {
			pgNote = fmt.Sprintf("  local PostgreSQL data: %s (the postgres user cannot reach %s)\n", dir, dataDir)
			fmt.Print(pgNote)
		}
		var started string
		c, err := pgcluster.Start(ctx, pgcluster.Options{Dir: dir, Persistent: true, Step: func(step string) {
			switch step {
			case "initdb":
				clock.lap("PostgreSQL cluster set up (initdb " + dir + ")")
			default:
				started = step
			}
		}})
		if err != nil {
			return "", fmt.Errorf("local PostgreSQL: %w", err)
		}
		if started == "running" {
			clock.lap(fmt.Sprintf("PostgreSQL already running on 127.0.0.1:%d", c.Port()))
		} else {
			clock.lap(fmt.Sprintf("PostgreSQL started on 127.0.0.1:%d", c.Port()))
		}
		cfg.DatabaseURL = c.URL("postgres")
	}
	if cfg.AdminToken == "" {
		tok, err := persistentSecret(filepath.Join(dataDir, "admin-token"))
		if err != nil {
			return "", err
		}
		cfg.AdminToken = tok
	}
	return pgNote, nil
}

// printDevBanner shows what the local run serves and how to try it.
func printDevBanner(g *Gateway, sim, secret, adminToken, fxNote, pgNote string) {
	base := "http://" + g.HTTPAddr
	metrics := "off (GATEWAY_METRICS_ADDR is empty)"
	if g.MetricsAddr != "" {
		metrics = "http://" + g.MetricsAddr + "/metrics"
	}
	fmt.Printf(`
  Model gateway is running on %[1]s (gRPC %[2]s), upstream simulator on %[3]s

  demo key:     %[4]s
  admin token:  %[5]s

  curl -s %[1]s/v1/models -H 'Authorization: Bearer %[4]s'
  curl -N %[1]s/v1/chat/completions -H 'Authorization: Bearer %[4]s' -H 'content-type: application/json' \
    -d '{"model":"demo-claude","stream":true,"messages":[{"role":"user","content":"hi"}]}'
  curl -N %[1]s/v1/messages -H 'x-api-key: %[4]s' -H 'anthropic-version: 2023-06-01' -H 'content-type: application/json' \
    -d '{"model":"demo-gpt","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
  curl -N %[1]s/v1/responses -H 'Authorization: Bearer %[4]s' -H 'content-type: application/json' \
    -d '{"model":"demo-gemini","stream":true,"input":"hi"}'
  curl -s %[1]s/v1/chat/completions -H 'Authorization: Bearer %[4]s' -H 'content-type: application/json' \
    -d '{"model":"demo-balanced","prompt_cache_key":"conv-1","messages":[{"role":"user","content":"hi"}]}'
  curl -N '%[1]s/v1beta/models/demo-gemini:streamGenerateContent?alt=sse' -H 'x-goog-api-key: %[4]s' \
    -H 'content-type: application/json' -d '{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
  curl -s %[1]s/v1/embeddings -H 'Authorization: Bearer %[4]s' -H 'content-type: application/json' \
    -d '{"model":"demo-embedding","input":["hello","world"]}'
  curl -s %[1]s/v1/rerank -H 'Authorization: Bearer %[4]s' -H 'content-type: application/json' \
    -d '{"model":"demo-rerank","query":"capital of France","documents":["Berlin","Paris is the capital"]}'
  curl -s %[1]s/v1/audio/speech -H 'Authorization: Bearer %[4]s' -H 'content-type: application/json' \
    -d '{"model":"demo-tts","input":"hello","voice":"alloy"}' -o speech.mp3
  curl -s %[1]s/v1/audio/transcriptions -H 'Authorization: Bearer %[4]s' -F file=@speech.mp3 -F model=demo-whisper
  curl -s %[1]s/v1/balance -H 'Authorization: Bearer %[4]s'
  curl -s %[1]s/admin/v1/profiles:lookup?external_ref=demo -H 'Authorization: Bearer %[5]s'
  curl -s '%[1]s/v1/catalog?currency=USD'

  Telegram bot (token from @BotFather; see README, "Telegram bot"):
  TELEGRAM_BOT_TOKEN=... GATEWAY_ADMIN_ADDR=%[2]s GATEWAY_ADMIN_TOKEN=%[5]s GATEWAY_PUBLIC_BASE_URL=%[1]s bin/gateway bot

%[6]s
%[7]s
  in a browser:
    API reference   %[1]s/docs
    status page     %[1]s/status
    models page     %[1]s/models
    metrics         %[8]s

  stop: Ctrl-C (the local PostgreSQL keeps running for the next run; README.md, Quick start,
  says how to stop it and start over)

`, base, g.GRPCAddr, sim, secret, adminToken, fxNote, pgNote, metrics)
}

// demoKeyEnv is the api_key_env of the demo catalogue's providers.
const demoKeyEnv = simulator.KeyEnv

// demoRates are made-up FX rates (units per 1 RUB, the demo billing currency), so that
// /v1/catalog?currency=USD shows prices on `make run`; stamped now on every run.
var demoRates = map[string]string{"USD": "0.0125", "EUR": "0.0110", "CNY": "0.0900"}

// seedDemoFX stores the demo rates as today's snapshot.
func seedDemoFX(ctx context.Context, g *Gateway) error {
	now := time.Now().UTC()
	if _, err := g.Admin.SetFxRates(ctx, &adminv1.SetFxRatesRequest{
		EffectiveDate: now.Format(time.DateOnly), FetchedAt: timestamppb.New(now), Rates: demoRates,
	}); err != nil {
		return fmt.Errorf("demo FX rates: %w", err)
	}
	return g.Snapshots.Reload(ctx)
}

// persistentSecret keeps a random local secret in a file so that re-runs print the same one.
func persistentSecret(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	tok := "adm-" + hex.EncodeToString(buf)
	return tok, os.WriteFile(path, []byte(tok+"\n"), 0o600)
}

// seedDemo applies the demo catalogue, makes sure the demo profile exists and is credited
// once, and returns a usable demo key: the one saved by an earlier run while it is still
// active, a new one otherwise.
func seedDemo(ctx context.Context, g *Gateway, simulatorURL, keyFile string) (string, error) {
	doc, err := catalog.Parse(simulator.DemoCatalog(simulatorURL))
	if err != nil {
		return "", fmt.Errorf("demo catalogue: %w", err)
	}
	if _, err := g.Store.ApplyCatalog(ctx, doc); err != nil {
		return "", fmt.Errorf("apply demo catalogue: %w", err)
	}
	p, err := g.Store.LookupProfile(ctx, "demo")
	if errors.Is(err, store.ErrNotFound) {
		p, err = g.Store.CreateProfile(ctx, "Demo", "demo")
	}
	if err != nil {
		return "", fmt.Errorf("demo profile: %w", err)
	}
	if _, err := g.Admin.CreditProfile(ctx, &adminv1.CreditProfileRequest{
		Id: p.ID.String(), Amount: "1000.00", Reason: "demo credit", IdempotencyKey: "demo-initial-credit",
	}); err != nil {
		return "", fmt.Errorf("credit demo profile: %w", err)
	}
	if err := g.Snapshots.Reload(ctx); err != nil {
		return "", err
	}
	if b, err := os.ReadFile(keyFile); err == nil {
		secret := strings.TrimSpace(string(b))
		if _, apiErr := g.Snapshots.Current().Authenticate(secret); apiErr == nil {
			return secret, nil
		}
	}
	resp, err := g.Admin.CreateKey(ctx, &adminv1.CreateKeyRequest{
		ProfileId: p.ID.String(), Name: "demo", AllowedEndpoints: []string{"*"}, AllowedModels: []string{"*"},
	})
	if err != nil {
		return "", fmt.Errorf("demo key: %w", err)
	}
	// A throwaway local key; kept so that re-runs print the same one.
	if err := os.WriteFile(keyFile, []byte(resp.GetSecret()+"\n"), 0o600); err != nil {
		return "", err
	}
	return resp.GetSecret(), nil
}
