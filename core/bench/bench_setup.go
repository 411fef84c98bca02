package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"modelgateway/core/store/pgcluster"
)

// Setting up a bench run: the database, both proxies, the catalogue, the profile and keys.

// setUp pins this process, starts the simulator, the bare proxy, PostgreSQL and the gateway,
// and provisions a key.
func (b *bench) setUp(ctx context.Context) error {
	b.pinned = b.pinSelf()
	b.simURL = "http://" + freeAddr()
	sim, err := b.start("simulator", b.layout.upstream, nil, "simulator", "-addr", strings.TrimPrefix(b.simURL, "http://"),
		"-first-byte", b.cfg.firstByte.String(), "-chunk-delay", b.cfg.chunkDelay.String(), "-words", strconv.Itoa(b.cfg.words))
	if err != nil {
		return err
	}
	b.sim = sim
	b.chatURL = b.simURL
	if b.cfg.canned {
		b.chatURL = "http://" + freeAddr()
		if b.canned, err = b.start("canned-upstream", b.layout.upstream, nil, "simulator", "-canned", "-addr", strings.TrimPrefix(b.chatURL, "http://"),
			"-words", strconv.Itoa(b.cfg.words)); err != nil {
			return err
		}
		if err := waitListening(ctx, b.canned, b.canned.addr); err != nil {
			return err
		}
	}
	b.bareURL = "http://" + freeAddr()
	var bareEnv []string // nil: inherit
	if b.cfg.profileDir != "" {
		bareEnv = append(os.Environ(), benchProfileEnv+"="+b.cfg.profileDir)
	}
	if b.bare, err = b.start("bare-proxy", b.layout.proxy, bareEnv, "bare-proxy", "-addr", strings.TrimPrefix(b.bareURL, "http://"),
		"-target", b.chatURL, "-paced-target", b.simURL); err != nil {
		return err
	}
	for _, c := range []*child{b.sim, b.bare} {
		if err := waitListening(ctx, c, c.addr); err != nil {
			return err
		}
	}
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		durability := "off"
		if b.cfg.pgDurable {
			durability = "on"
		}
		fmt.Fprintf(os.Stderr, "bench: starting a throwaway PostgreSQL (fsync and synchronous_commit %s)\n", durability)
		if b.pg, err = pgcluster.Start(ctx, pgcluster.Options{Durable: b.cfg.pgDurable}); err != nil {
			return fmt.Errorf("bench PostgreSQL: %w", err)
		}
		dbURL = b.pg.URL("postgres")
		if err := b.pinPostgres(); err != nil {
			return err
		}
	}
	catalogPath := filepath.Join(b.dir, "catalog.yaml")
	if err := os.WriteFile(catalogPath, []byte(benchCatalog(b.chatURL, b.simURL)), 0o644); err != nil {
		return fmt.Errorf("bench catalog: %w", err)
	}
	b.token = "bench-admin-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	httpAddr := freeAddr()
	b.gwURL = "http://" + httpAddr
	b.dbURL = dbURL
	env := append(os.Environ(),
		"DATABASE_URL="+dbURL, "GATEWAY_HTTP_ADDR="+httpAddr, "GATEWAY_GRPC_ADDR="+freeAddr(),
		"GATEWAY_ADMIN_TOKEN="+b.token, "GATEWAY_CATALOG="+catalogPath, "GATEWAY_DRAIN_TIMEOUT=2s",
		"BENCH_UPSTREAM_KEY=bench-upstream-key", benchMemPartsEnv+"="+b.dir)
	if b.cfg.profileDir != "" {
		env = append(env, benchProfileEnv+"="+b.cfg.profileDir)
	}
	if addr, set := os.LookupEnv("GATEWAY_METRICS_ADDR"); !set { // set and empty: metrics off
		b.metricsURL = "http://" + freeAddr() + "/metrics"
		env = append(env, "GATEWAY_METRICS_ADDR="+strings.TrimSuffix(strings.TrimPrefix(b.metricsURL, "http://"), "/metrics"))
	} else if addr != "" {
		b.metricsURL = "http://" + addr + "/metrics"
	}
	if b.gw, err = b.start("gateway", b.layout.proxy, env, "serve"); err != nil {
		return err
	}
	if err := b.waitReady(ctx); err != nil {
		return err
	}
	if err := b.provision(ctx); err != nil {
		return err
	}
	if err := b.setUpPairs(ctx); err != nil {
		return err
	}
	targets, err := b.targets()
	if err != nil {
		return err
	}
	return b.probe(ctx, targets)
}

// benchCatalog routes bench-gpt to the chat upstream as an OpenAI upstream (chat
// passthrough), bench-gpt-2routes likewise over two routes of one priority group (two
// providers, one upstream, weights 1:1), bench-gpt-responses to the same upstream's responses
// route, bench-claude as an Anthropic one (chat translated to messages and back),
// bench-claude-paced to the paced simulator likewise, and bench-whisper to the paced
// simulator's transcriptions (multipart uploads, priced per request as whisper is sold).
func benchCatalog(chat, sim string) string {
	return fmt.Sprintf(`currency: RUB
families:
  - id: bench
providers:
  - id: bench-openai
    kind: openai
    base_url: "%[1]s/v1"
    api_key_env: BENCH_UPSTREAM_KEY
  - id: bench-anthropic
    kind: anthropic
    base_url: "%[1]s"
    api_key_env: BENCH_UPSTREAM_KEY
  - id: bench-openai-b
    kind: openai
    base_url: "%[1]s/v1"
    api_key_env: BENCH_UPSTREAM_KEY
  - id: bench-openai-paced
    kind: openai
    base_url: "%[2]s/v1"
    api_key_env: BENCH_UPSTREAM_KEY
  - id: bench-anthropic-paced
    kind: anthropic
    base_url: "%[2]s"
    api_key_env: BENCH_UPSTREAM_KEY
models:
  - id: bench-gpt
    display_name: Bench GPT
    family: bench
    owned_by: bench
    priority: 10
    routes:
      - endpoint_families: [chat.completions]
        provider: bench-openai
        upstream_model: sim-gpt
    prices:
      - endpoint_families: [chat.completions]
        billing_mode: per_token
        input: "1.00"
        output: "2.00"
  - id: bench-gpt-2routes
    display_name: Bench GPT (two routes)
    family: bench
    owned_by: bench
    priority: 11
    routes:
      - endpoint_families: [chat.completions]
        provider: bench-openai
        upstream_model: sim-gpt
        priority: 0
        weight: 1
      - endpoint_families: [chat.completions]
        provider: bench-openai-b
        upstream_model: sim-gpt
        priority: 0
        weight: 1
    prices:
      - endpoint_families: [chat.completions]
        billing_mode: per_token
        input: "1.00"
        output: "2.00"
  - id: bench-gpt-responses
    display_name: Bench GPT (responses)
    family: bench
    owned_by: bench
    priority: 12
    routes:
      - endpoint_families: [responses]
        provider: bench-openai
        upstream_model: sim-gpt
    prices:
      - endpoint_families: [responses]
        billing_mode: per_token
        input: "1.00"
        output: "2.00"
  - id: bench-claude
    display_name: Bench Claude
    family: bench
    owned_by: bench
    priority: 20
    output_token_limit: 4096
    routes:
      - endpoint_families: [chat.completions]
        provider: bench-anthropic
        upstream_model: sim-claude
    prices:
      - endpoint_families: [chat.completions]
        billing_mode: per_token
        input: "1.00"
        output: "2.00"
  - id: bench-claude-paced
    display_name: Bench Claude (paced)
    family: bench
    owned_by: bench
    priority: 25
    output_token_limit: 4096
    routes:
      - endpoint_families: [chat.completions]
        provider: bench-anthropic-paced
        upstream_model: sim-claude
    prices:
      - endpoint_families: [chat.completions]
        billing_mode: per_token
        input: "1.00"
        output: "2.00"
  - id: bench-whisper
    display_name: Bench Whisper
    family: bench
    owned_by: bench
    priority: 30
    routes:
      - endpoint_families: [audio.transcriptions]
        provider: bench-openai-paced
        upstream_model: whisper-1
    prices:
      - endpoint_families: [audio.transcriptions]
        billing_mode: per_request
        request: "0.25"
`, chat, sim)
}

// waitReady polls /readyz; a gateway that exits (bad database, port taken) fails at once.
func (b *bench) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.gwURL+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-b.gw.exited:
			return fmt.Errorf("gateway exited before it was ready: %v", b.gw.err)
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("gateway not ready within 60s")
		}
	}
}

// provision creates a credited profile and a key through the admin HTTP API, as an operator
// would.
func (b *bench) provision(ctx context.Context) error {
	var profile struct {
		ID string `json:"id"`
	}
	ref := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := b.admin(ctx, "/admin/v1/profiles", map[string]any{"display_name": "Bench", "external_ref": ref}, &profile); err != nil {
		return err
	}
	credit := map[string]any{"amount": "1000000000.00", "reason": "bench", "idempotency_key": ref}
	if err := b.admin(ctx, "/admin/v1/profiles/"+profile.ID+":credit", credit, nil); err != nil {
		return err
	}
	var key struct {
		Secret string `json:"secret"`
	}
	policy := map[string]any{"name": "bench", "allowed_endpoints": []string{"*"}, "allowed_models": []string{"*"}}
	if err := b.admin(ctx, "/admin/v1/profiles/"+profile.ID+"/keys", policy, &key); err != nil {
		return err
	}
	if key.Secret == "" {
		return errors.New("admin CreateKey returned no secret")
	}
	b.key, b.profileID = key.Secret, profile.ID
	return nil
}

func (b *bench) admin(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.gwURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("admin %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("admin %s: HTTP %d: %s", path, resp.StatusCode, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("admin %s: %w", path, err)
	}
	return nil
}

// targets lists the requests of every scenario, both proxies'.
func (b *bench) targets() ([]target, error) {
	var targets []target
	for _, s := range append(b.scenarios(), b.pairScenarios()...) {
		targets = append(targets, s.bare, s.gw)
	}
	if b.cfg.uploads > 0 {
		s, err := b.uploadScenario()
		if err != nil {
			return nil, err
		}
		targets = append(targets, s.bare, s.gw)
	}
	return targets, nil
}

// probe sends each target's request until it succeeds: a new key is in force within a second,
// and a broken route should fail here with its body, not as a column of errors.
func (b *bench) probe(ctx context.Context, targets []target) error {
	client := newLoadClient(2)
	defer client.CloseIdleConnections()
	for _, t := range targets {
		deadline := time.Now().Add(15 * time.Second)
		for {
			o := doRequest(ctx, client, t, nil)
			if o.err == "" {
				break
			}
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("probe %s: %s", t.name, o.err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}
