package main

// `make bench`: the gateway against a bare reverse proxy, both in front of the same upstream
// simulator, under the same closed-loop load. Wall-clock throughput alone would hide the
// gateway's cost on a 2-core machine (the load generator competes for the cores), so the
// proxies are pinned to CPU 0, everything else to CPU 1, and each proxy's CPU time is read
// from /proc around the measured rounds.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"modelgateway/core/store/pgcluster"
)

// cmdBareProxy is the benchmark's baseline: the standard library's reverse proxy and nothing
// else. Its connection pool has the gateway's upstream pool sizes (core/provider.Client), so
// the comparison measures the gateway's work, not connection churn in the baseline.
func cmdBareProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bare-proxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8088", "listen address")
	target := fs.String("target", "", "upstream base URL, e.g. http://127.0.0.1:8089")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("bare-proxy: -target must be an absolute URL, got %q", *target)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	proxy := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		FlushInterval: -1,
		Transport:     tr,
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen bare proxy: %w", err)
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println("bare proxy serving on", "http://"+ln.Addr().String())
	<-ctx.Done()
	return srv.Close()
}

// benchConfig holds the flags of `gateway bench`.
type benchConfig struct {
	duration, warmup      time.Duration
	concurrency, streams  int
	rounds                int
	firstByte, chunkDelay time.Duration
	words                 int
	profileDir            string
	uploads               int
	uploadDuration        time.Duration
}

func cmdBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c benchConfig
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per scenario and proxy")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured load per scenario and proxy before the rounds")
	fs.IntVar(&c.concurrency, "concurrency", 32, "closed-loop clients of scenarios 1 and 2")
	fs.IntVar(&c.streams, "rss-streams", 64, "concurrent streams of the peak-RSS scenario")
	fs.IntVar(&c.rounds, "rounds", 5, "alternating bare/gateway rounds the measured time is split into")
	fs.DurationVar(&c.firstByte, "first-byte", 2*time.Millisecond, "simulator delay before the response headers")
	fs.DurationVar(&c.chunkDelay, "chunk-delay", time.Millisecond, "simulator delay between stream chunks")
	fs.IntVar(&c.words, "words", 20, "simulator words (stream chunks) per answer")
	fs.StringVar(&c.profileDir, "cpuprofile-dir", "", "write CPU profiles of both proxies, one per scenario, here (perturbs the numbers)")
	fs.IntVar(&c.uploads, "uploads", 4, "concurrent clients of the 25 MiB upload scenario (0 skips it)")
	fs.DurationVar(&c.uploadDuration, "upload-duration", 4*time.Second, "measured time of the upload scenario per proxy")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.duration <= 0 || c.concurrency <= 0 || c.streams <= 0 || c.words <= 0 || c.rounds <= 0 || c.warmup < 0 {
		return errors.New("bench: -duration, -concurrency, -rss-streams, -rounds and -words must be positive")
	}
	if c.uploads < 0 || c.uploads > 0 && c.uploadDuration <= 0 {
		return errors.New("bench: -uploads must not be negative, -upload-duration must be positive")
	}
	b, err := newBench(c)
	if err != nil {
		return err
	}
	defer b.close()
	// Ctrl-C cancels ctx; the deferred close then stops every child and PostgreSQL.
	err = b.setUp(ctx)
	if err == nil {
		err = b.run(ctx, os.Stdout)
	}
	if err != nil && ctx.Err() == nil {
		b.dumpLogs()
	}
	return err
}

// bench owns the temporary directory, the child processes and the database.
type bench struct {
	cfg      benchConfig
	exe, dir string
	pinned   bool
	hz       float64

	children []*child
	pg       *pgcluster.Cluster

	dbURL                         string
	sim, bare, gw                 *child
	simURL, bareURL, gwURL, token string
	key                           string
}

func newBench(c benchConfig) (*bench, error) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	dir, err := os.MkdirTemp("", "gwbench")
	if err != nil {
		return nil, fmt.Errorf("bench temp dir: %w", err)
	}
	b := &bench{cfg: c, exe: exe, dir: dir, hz: clockTicks()}
	if c.profileDir != "" {
		if b.cfg.profileDir, err = filepath.Abs(c.profileDir); err == nil {
			err = os.MkdirAll(b.cfg.profileDir, 0o755)
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("profile dir: %w", err)
		}
	}
	return b, nil
}

// setUp pins this process, starts the simulator, the bare proxy, PostgreSQL and the gateway,
// and provisions a key.
func (b *bench) setUp(ctx context.Context) error {
	b.pinned = b.pinSelf()
	b.simURL = "http://" + freeAddr()
	sim, err := b.start("simulator", "1", nil, "simulator", "-addr", strings.TrimPrefix(b.simURL, "http://"),
		"-first-byte", b.cfg.firstByte.String(), "-chunk-delay", b.cfg.chunkDelay.String(), "-words", strconv.Itoa(b.cfg.words))
	if err != nil {
		return err
	}
	b.sim = sim
	b.bareURL = "http://" + freeAddr()
	var bareEnv []string // nil: inherit
	if b.cfg.profileDir != "" {
		bareEnv = append(os.Environ(), benchProfileEnv+"="+b.cfg.profileDir)
	}
	if b.bare, err = b.start("bare-proxy", "0", bareEnv, "bare-proxy", "-addr", strings.TrimPrefix(b.bareURL, "http://"), "-target", b.simURL); err != nil {
		return err
	}
	for _, c := range []*child{b.sim, b.bare} {
		if err := waitListening(ctx, c, c.addr); err != nil {
			return err
		}
	}
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		fmt.Fprintln(os.Stderr, "bench: starting a throwaway PostgreSQL")
		if b.pg, err = pgcluster.Start(ctx, pgcluster.Options{}); err != nil {
			return fmt.Errorf("bench PostgreSQL: %w", err)
		}
		dbURL = b.pg.URL("postgres")
	}
	catalogPath := filepath.Join(b.dir, "catalog.yaml")
	if err := os.WriteFile(catalogPath, []byte(benchCatalog(b.simURL)), 0o644); err != nil {
		return fmt.Errorf("bench catalog: %w", err)
	}
	b.token = "bench-admin-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	httpAddr := freeAddr()
	b.gwURL = "http://" + httpAddr
	b.dbURL = dbURL
	env := append(os.Environ(),
		"DATABASE_URL="+dbURL, "GATEWAY_HTTP_ADDR="+httpAddr, "GATEWAY_GRPC_ADDR="+freeAddr(),
		"GATEWAY_ADMIN_TOKEN="+b.token, "GATEWAY_CATALOG="+catalogPath, "GATEWAY_DRAIN_TIMEOUT=2s",
		"BENCH_UPSTREAM_KEY=bench-upstream-key")
	if b.cfg.profileDir != "" {
		env = append(env, benchProfileEnv+"="+b.cfg.profileDir)
	}
	if _, set := os.LookupEnv("GATEWAY_METRICS_ADDR"); !set { // set and empty: metrics off
		env = append(env, "GATEWAY_METRICS_ADDR="+freeAddr())
	}
	if b.gw, err = b.start("gateway", "0", env, "serve"); err != nil {
		return err
	}
	if err := b.waitReady(ctx); err != nil {
		return err
	}
	if err := b.provision(ctx); err != nil {
		return err
	}
	targets, err := b.targets()
	if err != nil {
		return err
	}
	return b.probe(ctx, targets)
}

// benchCatalog routes bench-gpt to the simulator as an OpenAI upstream (chat passthrough),
// bench-claude as an Anthropic one (chat translated to messages and back), and bench-whisper
// to its transcriptions (multipart uploads, priced per request as whisper is sold).
func benchCatalog(sim string) string {
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
  - id: bench-whisper
    display_name: Bench Whisper
    family: bench
    owned_by: bench
    priority: 30
    routes:
      - endpoint_families: [audio.transcriptions]
        provider: bench-openai
        upstream_model: whisper-1
    prices:
      - endpoint_families: [audio.transcriptions]
        billing_mode: per_request
        request: "0.25"
`, sim)
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
	b.key = key.Secret
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
	for _, s := range b.scenarios() {
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

// target is one kind of request sent to one proxy.
type target struct {
	name   string
	url    string
	body   []byte
	form   *uploadForm // sent instead of body when set
	header http.Header
	stream bool
}

type scenario struct {
	title       string
	concurrency int
	duration    time.Duration // measured time per proxy; 0 is -duration
	// resetPeak makes VmHWM the peak of the measured rounds rather than of the whole run.
	resetPeak bool
	bare, gw  target
}

func (b *bench) scenarios() []scenario {
	header := http.Header{"Authorization": {"Bearer " + b.key}, "Content-Type": {"application/json"}}
	chat := func(name, base, model string, stream bool) target {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]}`
		if stream {
			body = `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"hello"}]}`
		}
		return target{name: name, url: base + "/v1/chat/completions", body: []byte(body), header: header, stream: stream}
	}
	return []scenario{{
		title:       "1. chat completions, non-streamed passthrough (gateway model bench-gpt, kind openai)",
		concurrency: b.cfg.concurrency,
		bare:        chat("bare", b.bareURL, "sim-gpt", false),
		gw:          chat("gateway", b.gwURL, "bench-gpt", false),
	}, {
		title:       "2. chat completions streamed; gateway translates messages SSE -> chat SSE (bench-claude, kind anthropic)",
		concurrency: b.cfg.concurrency,
		bare:        chat("bare", b.bareURL, "sim-gpt", true),
		gw:          chat("gateway", b.gwURL, "bench-claude", true),
	}, {
		title:       fmt.Sprintf("3. peak RSS holding %d concurrent translated streams (bench-claude)", b.cfg.streams),
		concurrency: b.cfg.streams,
		bare:        chat("bare", b.bareURL, "sim-gpt", true),
		gw:          chat("gateway", b.gwURL, "bench-claude", true),
	}}
}

// phaseResult is one measured phase against one proxy.
type phaseResult struct {
	loadResult
	cpuSample           // summed over this proxy's rounds
	window    cpuSample // over the whole measurement window (see scenario)
	hwm       int64     // proxy VmHWM in kB after the phase
	rss       int64     // proxy VmRSS in kB after the phase
	peak      peakReset // how hwm was reset, with scenario.resetPeak
}

// settleGrace outlasts the gateway's deferred per-request work: the contract settles a charge
// within 2 s of the response's end.
const settleGrace = 2500 * time.Millisecond

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (r phaseResult) rps() float64 { return float64(r.requests) / r.elapsed.Seconds() }

// pct is a CPU time in percent of the phase's wall time.
func (r phaseResult) pct(d time.Duration) float64 { return 100 * d.Seconds() / r.elapsed.Seconds() }

// cpuPerReq and cpuPerChunk use the window: they include deferred work (billing batches) and
// the idle background of the proxy while the other one was measured (snapshot polling: tiny).
func (r phaseResult) cpuPerReq() float64 {
	return float64(r.window.cpu.Microseconds()) / float64(max(r.requests, 1))
}
func (r phaseResult) cpuPerChunk() float64 {
	return float64(r.window.cpu.Microseconds()) / float64(max(r.chunks, 1))
}

// run drives every scenario against the bare proxy and the gateway, and prints.
func (b *bench) run(ctx context.Context, w io.Writer) error {
	b.header(w)
	var failed []string
	profiles := 0
	tx0, req0, txErr := b.dbCounts(ctx)
	for i, s := range b.scenarios() {
		fmt.Fprintf(w, "\n%s\n", s.title)
		res, err := b.scenario(ctx, s, b.cfg.profileDir != "")
		if err != nil {
			return err
		}
		if b.cfg.profileDir != "" {
			profiles++
		}
		for j, r := range res {
			if r.errors > 0 {
				failed = append(failed, fmt.Sprintf("scenario %d %s", i+1, proxyNames[j]))
			}
		}
		switch i {
		case 0:
			b.printPassthrough(w, res)
		case 1:
			b.printStreams(w, res)
		case 2:
			b.printRSS(w, res)
		}
	}
	var txLine, chargeLine string
	if txErr == nil {
		// Backends report their statistics at most every second when busy and after 10 s when
		// idle, so the count is read once, over the chat scenarios, after that; the uploads
		// come after it, as they would not say much about the chat path.
		if err := sleepCtx(ctx, 11*time.Second); err != nil {
			return err
		}
		chargeLine = b.chargeStats()
		if tx1, req1, err := b.dbCounts(ctx); err == nil && req1 > req0 {
			// Each dbCounts call is one transaction of its own.
			txLine = fmt.Sprintf("%.3f (%d transactions, %d requests)", float64(tx1-tx0-1)/float64(req1-req0), tx1-tx0-1, req1-req0)
		} else {
			txLine = fmt.Sprintf("not measured (%v)", err)
		}
	}
	if b.cfg.uploads > 0 {
		f, err := b.uploads(ctx, w, profiles+1)
		if err != nil {
			return err
		}
		failed = append(failed, f...)
		if b.cfg.profileDir != "" {
			profiles++
		}
	}
	if txLine != "" {
		fmt.Fprintf(w, "\ndatabase transactions per gateway request (chat scenarios 1 to 3, warmups included): %s\n", txLine)
		fmt.Fprintf(w, "end-of-answer wait for the durable charge (group commit), chat scenarios: %s\n", chargeLine)
	}
	if profiles > 0 {
		time.Sleep(500 * time.Millisecond) // let the gateway finish writing the last profile
		fmt.Fprintf(w, "\nCPU profiles of both proxies, one per scenario (numbers above are perturbed by profiling):\n")
		for i := 1; i <= profiles; i++ {
			for _, name := range proxyNames {
				fmt.Fprintf(w, "  go tool pprof -top %s %s\n", b.exe, filepath.Join(b.cfg.profileDir, fmt.Sprintf("%s-%d.pprof", name, i)))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench: requests FAILED in %s: those numbers are not valid", strings.Join(failed, ", "))
	}
	return nil
}

var proxyNames = [2]string{"bare", "gateway"}

// chargeStats reads the gateway's last "charges committed" log line (written every 10 s while
// charges happen): how long answers waited at their end for the charge to be durable.
func (b *bench) chargeStats() string {
	data, err := os.ReadFile(b.gw.log)
	if err != nil {
		return "not measured (" + err.Error() + ")"
	}
	lines := strings.Split(string(data), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], "charges committed") {
			continue
		}
		f := map[string]string{}
		var js map[string]any
		if json.Unmarshal([]byte(lines[i]), &js) == nil { // JSON logs: durations in nanoseconds
			for k, v := range js {
				f[k] = fmt.Sprint(v)
				if n, ok := v.(float64); ok && strings.HasPrefix(k, "wait_") {
					f[k] = time.Duration(n).String()
				}
			}
		} else {
			for _, kv := range strings.Fields(lines[i]) {
				if k, v, ok := strings.Cut(kv, "="); ok {
					f[k] = v
				}
			}
		}
		return fmt.Sprintf("p50 %s, p99 %s (%s charges in %s commits)", f["wait_p50"], f["wait_p99"], f["charges"], f["commits"])
	}
	return "not measured (no statistics in the gateway log)"
}

// dbCounts reads the database's committed transactions and the gateway's request records
// (one per request that passed the key checks).
func (b *bench) dbCounts(ctx context.Context) (xacts, requests int64, err error) {
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
		(SELECT count(*) FROM requests)`).Scan(&xacts, &requests)
	return xacts, requests, err
}

func (b *bench) header(w io.Writer) {
	pin := "proxies on CPU 0, load generator + simulator on CPU 1"
	if !b.pinned {
		pin = "NOT PINNED (needs taskset and 2 CPUs): CPU numbers include contention"
	}
	fmt.Fprintf(w, "gateway bench: %d CPUs, %s; clock %g Hz\n", runtime.NumCPU(), pin, b.hz)
	fmt.Fprintf(w, "simulator: first-byte %v, chunk-delay %v, %d words\n", b.cfg.firstByte, b.cfg.chunkDelay, b.cfg.words)
	fmt.Fprintf(w, "load: closed loop; per scenario and proxy: warmup %v, then %v measured in %d rounds alternating bare and gateway\n",
		b.cfg.warmup, b.cfg.duration, b.cfg.rounds)
	if b.cfg.uploads > 0 {
		fmt.Fprintf(w, "uploads: %d clients, forms of %d MiB; both proxies restarted, then per proxy: 1 client for %v, warmup %v, %v measured in %d rounds\n",
			b.cfg.uploads, uploadSize>>20, b.cfg.uploadDuration/2, b.cfg.warmup, b.cfg.uploadDuration, b.cfg.rounds)
	}
	fmt.Fprintf(w, "columns: proxy = proxy process CPU, CPU0 = all of CPU 0, load = bench + simulator CPU, CPU1 = all of CPU 1 (%% of wall time);\n")
	fmt.Fprintf(w, "  CPU µs = proxy process user+system time from %v before the first round to %v after the last, per request\n", settleGrace, settleGrace)
}

// scenario warms both proxies up, then measures them in alternating rounds (bare, gateway,
// gateway, bare, ...) so that slow drifts and other processes' bursts hit both alike.
func (b *bench) scenario(ctx context.Context, s scenario, profile bool) ([2]phaseResult, error) {
	var res [2]phaseResult
	procs := [2]*child{b.bare, b.gw}
	targets := [2]target{s.bare, s.gw}
	var clients [2]*http.Client
	for j := range clients {
		clients[j] = newLoadClient(s.concurrency)
		defer clients[j].CloseIdleConnections()
	}
	if b.cfg.warmup > 0 {
		for j, t := range targets {
			if r := runLoad(ctx, clients[j], t, s.concurrency, b.cfg.warmup); r.requests == 0 && ctx.Err() == nil {
				return res, fmt.Errorf("%s warmup: no request succeeded (%s)", t.name, r.errorSummary())
			}
		}
	}
	if profile {
		for _, p := range procs {
			_ = p.cmd.Process.Signal(syscall.SIGUSR1)
			defer func() { _ = p.cmd.Process.Signal(syscall.SIGUSR1) }()
		}
	}
	// The window brackets the rounds with the gateway's settlement delay on both sides, so
	// that per-request CPU includes the batched billing work of exactly the measured requests
	// (the warmup's is done before it opens; the last round's before it closes).
	var windowStart [2]cpuSample
	if err := sleepCtx(ctx, settleGrace); err != nil {
		return res, err
	}
	for j, p := range procs {
		var err error
		if windowStart[j], err = b.sample(p); err != nil {
			return res, fmt.Errorf("%s: %w", targets[j].name, err)
		}
	}
	if s.resetPeak {
		for j, p := range procs {
			res[j].peak = resetPeak(p.cmd.Process.Pid)
		}
	}
	round := cmp.Or(s.duration, b.cfg.duration) / time.Duration(b.cfg.rounds)
	for k := range b.cfg.rounds {
		order := []int{0, 1}
		if k%2 == 1 {
			order = []int{1, 0}
		}
		for _, j := range order {
			if err := ctx.Err(); err != nil {
				return res, context.Cause(ctx)
			}
			before, err := b.sample(procs[j])
			if err != nil {
				return res, fmt.Errorf("%s: %w", targets[j].name, err)
			}
			r := runLoad(ctx, clients[j], targets[j], s.concurrency, round)
			after, err := b.sample(procs[j])
			if err != nil {
				return res, fmt.Errorf("%s: %w", targets[j].name, err)
			}
			res[j].loadResult.merge(r)
			res[j].cpuSample = res[j].cpuSample.plus(after.minus(before))
		}
	}
	if err := sleepCtx(ctx, settleGrace); err != nil {
		return res, err
	}
	for j := range res {
		end, err := b.sample(procs[j])
		if err != nil {
			return res, fmt.Errorf("%s: %w", targets[j].name, err)
		}
		res[j].window = end.minus(windowStart[j])
		slices.Sort(res[j].latencies)
		if res[j].hwm, res[j].rss, err = memory(procs[j].cmd.Process.Pid); err != nil {
			return res, fmt.Errorf("%s: %w", targets[j].name, err)
		}
	}
	return res, nil
}

// cpuSample is cumulative CPU time: of the processes the bench watches, and of the two CPUs
// as a whole (to see whether anything else ran on them).
type cpuSample struct {
	cpu     time.Duration // the proxy process (user+system)
	loadCPU time.Duration // this process plus the simulator
	pgCPU   time.Duration // the throwaway PostgreSQL (0 with DATABASE_URL)
	busy    [2]time.Duration
	io      procIO // the proxy's read and write system calls
}

func (a cpuSample) minus(b cpuSample) cpuSample {
	return cpuSample{cpu: a.cpu - b.cpu, loadCPU: a.loadCPU - b.loadCPU, pgCPU: a.pgCPU - b.pgCPU,
		busy: [2]time.Duration{a.busy[0] - b.busy[0], a.busy[1] - b.busy[1]},
		io:   procIO{syscr: a.io.syscr - b.io.syscr, syscw: a.io.syscw - b.io.syscw}}
}

func (a cpuSample) plus(b cpuSample) cpuSample {
	return cpuSample{cpu: a.cpu + b.cpu, loadCPU: a.loadCPU + b.loadCPU, pgCPU: a.pgCPU + b.pgCPU,
		busy: [2]time.Duration{a.busy[0] + b.busy[0], a.busy[1] + b.busy[1]},
		io:   procIO{syscr: a.io.syscr + b.io.syscr, syscw: a.io.syscw + b.io.syscw}}
}

func (b *bench) sample(proc *child) (cpuSample, error) {
	var s cpuSample
	var errs [5]error
	s.cpu, errs[0] = cpuTime(proc.cmd.Process.Pid, b.hz)
	self, err := cpuTime(os.Getpid(), b.hz)
	errs[1] = err
	sim, err := cpuTime(b.sim.cmd.Process.Pid, b.hz)
	errs[2] = err
	s.loadCPU = self + sim
	if b.pg != nil {
		s.pgCPU, errs[3] = postgresCPU(b.hz)
	}
	s.busy, errs[4] = cpuBusy(b.hz)
	s.io = readProcIO(proc.cmd.Process.Pid)
	return s, errors.Join(errs[:]...)
}

// Printing. Every table has the same leading columns so the scenarios read alike.

func (b *bench) printCommon(w io.Writer, extra string, res [2]phaseResult, cols func(phaseResult) string) {
	fmt.Fprintf(w, "  %-8s %5s %8s %6s %8s %8s %8s %6s %6s %6s %6s%s\n",
		"proxy", "conc", "requests", "errors", "req/s", "p50", "p99", "proxy", "CPU0", "load", "CPU1", extra)
	for i, r := range res {
		fmt.Fprintf(w, "  %-8s %5d %8d %6d %8.1f %8s %8s %5.0f%% %5.0f%% %5.0f%% %5.0f%%%s\n",
			proxyNames[i], r.concurrency, r.requests, r.errors, r.rps(), ms(r.percentile(50)), ms(r.percentile(99)),
			r.pct(r.cpu), r.pct(r.busy[0]), r.pct(r.loadCPU), r.pct(r.busy[1]), cols(r))
	}
	perReq := func(r phaseResult, n int64) float64 { return float64(n) / float64(max(r.requests, 1)) }
	if res[0].window.io.syscr > 0 {
		fmt.Fprintf(w, "  proxy read/write system calls per request: bare %.1f/%.1f, gateway %.1f/%.1f\n",
			perReq(res[0], res[0].window.io.syscr), perReq(res[0], res[0].window.io.syscw),
			perReq(res[1], res[1].window.io.syscr), perReq(res[1], res[1].window.io.syscw))
	}
	if b.pg != nil {
		// The whole window: the bare proxy never touches PostgreSQL, so it is the gateway's.
		fmt.Fprintf(w, "  PostgreSQL CPU (on CPU 1, not in the proxy's numbers): %.1f µs per gateway request\n",
			perReq(res[1], res[1].window.pgCPU.Microseconds()))
	}
	for i, r := range res {
		if r.errors > 0 {
			fmt.Fprintf(w, "  !!! %s: %d of %d requests FAILED: %s\n", proxyNames[i], r.errors, r.requests+r.errors, r.errorSummary())
		}
		// CPU time the watched processes do not account for: other programs on the pinned
		// CPUs (the kernel's network work on behalf of ours is a few points).
		other0, other1 := r.pct(r.busy[0]-r.cpu), r.pct(r.busy[1]-r.loadCPU-r.pgCPU)
		if b.pinned && (other0 > contentionPoints || other1 > contentionPoints) {
			fmt.Fprintf(w, "  !!! %s: other work used about %.0f%% of CPU 0 and %.0f%% of CPU 1: the machine is not quiet, numbers are unreliable\n",
				proxyNames[i], other0, other1)
		}
	}
}

// contentionPoints is the share of a pinned CPU, in percent of wall time, that may go to work
// outside the watched processes before a phase is flagged.
const contentionPoints = 15

func (b *bench) printPassthrough(w io.Writer, res [2]phaseResult) {
	b.printCommon(w, "  CPU µs/req", res, func(r phaseResult) string { return fmt.Sprintf("  %10.1f", r.cpuPerReq()) })
	cpu := res[1].cpuPerReq() / res[0].cpuPerReq()
	thr := res[1].rps() / res[0].rps()
	fmt.Fprintf(w, "  gateway/bare: CPU per request %.2fx (target <= 1.2x: %s); throughput %.2fx (target >= 0.9x: %s)\n",
		cpu, verdict(cpu <= 1.2), thr, verdict(thr >= 0.9))
}

func (b *bench) printStreams(w io.Writer, res [2]phaseResult) {
	b.printCommon(w, "  chunks/req  CPU µs/req  CPU µs/chunk", res, func(r phaseResult) string {
		return fmt.Sprintf("  %10.1f  %10.1f  %12.2f", float64(r.chunks)/float64(max(r.requests, 1)), r.cpuPerReq(), r.cpuPerChunk())
	})
	chunk := res[1].cpuPerChunk() / res[0].cpuPerChunk()
	thr := res[1].rps() / res[0].rps()
	fmt.Fprintf(w, "  gateway/bare: CPU per chunk %.2fx (target <= 1.3x: %s); CPU per request %.2fx; throughput %.2fx\n",
		chunk, verdict(chunk <= 1.3), res[1].cpuPerReq()/res[0].cpuPerReq(), thr)
}

func (b *bench) printRSS(w io.Writer, res [2]phaseResult) {
	b.printCommon(w, "  max open  VmHWM MB  VmRSS MB", res, func(r phaseResult) string {
		return fmt.Sprintf("  %8d  %8.1f  %8.1f", r.maxOpen, mb(r.hwm), mb(r.rss))
	})
	fmt.Fprintf(w, "  gateway peak RSS (VmHWM, whole run) %.1f MB (target < 100 MB: %s)\n", mb(res[1].hwm), verdict(mb(res[1].hwm) < 100))
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
func mb(kb int64) float64       { return float64(kb) / 1024 }

// The load generator.
