package bench

// `make bench`: the gateway against a bare reverse proxy, both in front of the same upstream
// simulator, under the same closed-loop load. Wall-clock throughput alone would hide the
// gateway's cost on a 2-core machine (the load generator competes for the cores), so the
// proxies are pinned to CPU 0, everything else to CPU 1, and each proxy's CPU time is read
// from /proc around the measured rounds.

import (
	"cmp"
	"context"
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

	"modelgateway/core/store/pgcluster"
)

// BareProxy is the benchmark's baseline: the standard library's reverse proxy and nothing
// else. Its connection pool has the gateway's upstream pool sizes (core/provider.Client), so
// the comparison measures the gateway's work, not connection churn in the baseline.
func BareProxy(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bare-proxy", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8088", "listen address")
	target := fs.String("target", "", "upstream base URL, e.g. http://127.0.0.1:8089")
	paced := fs.String("paced-target", "", "upstream base URL of requests with the header "+pacedHeader+" (default -target)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("bare-proxy: -target must be an absolute URL, got %q", *target)
	}
	pu := u
	if *paced != "" {
		if pu, err = url.Parse(*paced); err != nil || pu.Scheme == "" || pu.Host == "" {
			return fmt.Errorf("bare-proxy: -paced-target must be an absolute URL, got %q", *paced)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 256
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			if r.In.Header.Get(pacedHeader) != "" {
				r.Out.Header.Del(pacedHeader)
				r.SetURL(pu)
				return
			}
			r.SetURL(u)
		},
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

// pacedHeader sends a bare-proxy request to the paced simulator rather than the canned
// upstream: the gateway routes those by model, the bare proxy cannot.
const pacedHeader = "X-Bench-Paced"

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
	canned                bool
	pgDurable             bool // the throwaway PostgreSQL with fsync and synchronous commits on
	pgRealtime            bool // the throwaway PostgreSQL under SCHED_RR
	inputTokens           int
	layout                string
	scenarios             scenarioSet // which scenarios run (-scenarios)
	batchItems            int         // items of the batch scenario (bench_batch.go)
}

// Main runs `gateway bench` with its command-line arguments.
func Main(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c benchConfig
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time per scenario and proxy")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured load per scenario and proxy before the rounds")
	fs.IntVar(&c.concurrency, "concurrency", 64, "closed-loop clients of scenarios 1 and 2")
	fs.BoolVar(&c.canned, "canned", true, "scenarios 1 and 2 against the canned upstream (answers replayed from memory, 0 ms); false: the paced simulator")
	fs.BoolVar(&c.pgDurable, "pg-durable", false, "run the throwaway PostgreSQL with fsync, synchronous_commit and full_page_writes on (a charge is then durable on this machine's disk, not only in PostgreSQL's memory); default off, as in the test clusters")
	fs.BoolVar(&c.pgRealtime, "pg-realtime", false, "run the throwaway PostgreSQL's processes under the real-time policy SCHED_RR (lowest priority): in layout two, where PostgreSQL shares CPU 1 with the load generator and simulators, a commit then waits for PostgreSQL's work and not for that CPU, as on a database with cores of its own; its CPU time is counted the same (needs chrt and CAP_SYS_NICE)")
	fs.IntVar(&c.inputTokens, "input-tokens", 20000, "input tokens the upstream reports for each chat answer: above the hold, as image and tool inputs are (0: counted)")
	fs.IntVar(&c.streams, "rss-streams", 64, "concurrent streams of the peak-RSS scenario")
	fs.IntVar(&c.rounds, "rounds", 5, "alternating bare/gateway rounds the measured time is split into")
	fs.DurationVar(&c.firstByte, "first-byte", 2*time.Millisecond, "paced simulator delay before the response headers (scenarios 3, 4; 1, 2 with -canned=false)")
	fs.DurationVar(&c.chunkDelay, "chunk-delay", time.Millisecond, "paced simulator delay between stream chunks")
	fs.IntVar(&c.words, "words", 20, "simulator words (stream chunks) per answer")
	fs.StringVar(&c.profileDir, "cpuprofile-dir", "", "write CPU profiles of both proxies, one per scenario, here (perturbs the numbers)")
	fs.IntVar(&c.uploads, "uploads", 4, "concurrent clients of the 25 MiB upload scenario (0 skips it)")
	fs.DurationVar(&c.uploadDuration, "upload-duration", 4*time.Second, "measured time of the upload scenario per proxy")
	fs.IntVar(&c.batchItems, "batch-items", 10000, "items of the batch scenario's batch")
	scenarios := fs.String("scenarios", defaultScenarios, "comma-separated scenarios to run, of "+strings.Join(scenarioNames, ", ")+", or all; the upload scenario is -uploads")
	fs.StringVar(&c.layout, "layout", "two", "where the processes run: two (proxies on CPU 0, all else on CPU 1) or many (4+ CPUs: proxies on CPU 0; PostgreSQL, upstream simulators and load generator each on CPUs of their own)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.duration <= 0 || c.concurrency <= 0 || c.streams <= 0 || c.words <= 0 || c.rounds <= 0 || c.warmup < 0 {
		return errors.New("bench: -duration, -concurrency, -rss-streams, -rounds and -words must be positive")
	}
	var err error
	if c.scenarios, err = parseScenarios(*scenarios); err != nil {
		return err
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
	layout   layout
	hz       float64

	children []*child
	pg       *pgcluster.Cluster

	dbURL                         string
	sim, canned, bare, gw         *child
	simURL, bareURL, gwURL, token string
	metricsURL                    string // the gateway's /metrics; empty when off
	chatURL                       string // the upstream of scenarios 1 and 2
	key                           string
	profileID                     string // the key's profile
	pairs                         pairSetup
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
	lay, err := newLayout(c.layout, runtime.NumCPU())
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	b := &bench{cfg: c, exe: exe, dir: dir, layout: lay, hz: clockTicks()}
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
	name        string // as -scenarios names it
	num         string // its number in the report (the title's first word)
	title       string
	concurrency int
	duration    time.Duration // measured time per proxy; 0 is -duration
	// resetPeak makes VmHWM the peak of the measured rounds rather than of the whole run.
	resetPeak bool
	bare, gw  target
	// pair scenarios measure the gateway against itself: bare is the baseline request (an
	// unlimited key, one route, a conversation sent inline), gw the one under test, both sent
	// to the gateway; names label them in place of proxyNames.
	pair  bool
	names [2]string
	// cpuTarget is the highest CPU per request of side 1 over side 0 a pair may show (0:
	// none); sameTx asks for the same database transactions per request on both sides.
	cpuTarget float64
	sameTx    bool
	print     func(io.Writer, [2]phaseResult)
}

// labels are the names of a scenario's two sides as printed.
func (s scenario) labels() [2]string {
	if s.pair {
		return s.names
	}
	return proxyNames
}

func (b *bench) scenarios() []scenario {
	header := http.Header{"Authorization": {"Bearer " + b.key}, "Content-Type": {"application/json"}}
	paced := header.Clone()
	paced.Set(pacedHeader, "1")
	content := "hello"
	if b.cfg.inputTokens > 0 {
		content += " #sim:input=" + strconv.Itoa(b.cfg.inputTokens)
	}
	chat := func(name, base, model string, stream bool, h http.Header) target {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"` + content + `"}]}`
		if stream {
			body = `{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"` + content + `"}]}`
		}
		return target{name: name, url: base + "/v1/chat/completions", body: []byte(body), header: h, stream: stream}
	}
	return []scenario{{
		name:        "passthrough",
		num:         "1",
		title:       "1. chat completions, non-streamed passthrough (gateway model bench-gpt, kind openai)",
		concurrency: b.cfg.concurrency,
		bare:        chat("bare", b.bareURL, "sim-gpt", false, header),
		gw:          chat("gateway", b.gwURL, "bench-gpt", false, header),
		print:       b.printPassthrough,
	}, {
		name:        "stream",
		num:         "2",
		title:       "2. chat completions streamed; gateway translates messages SSE -> chat SSE (bench-claude, kind anthropic)",
		concurrency: b.cfg.concurrency,
		bare:        chat("bare", b.bareURL, "sim-gpt", true, header),
		gw:          chat("gateway", b.gwURL, "bench-claude", true, header),
		print:       b.printStreams,
	}, {
		// The per-chunk target holds for passthrough streams too: the same chat SSE in and out,
		// the gateway reading each chunk for its usage and model.
		name:        "streampass",
		num:         "2b",
		title:       "2b. chat completions streamed passthrough, chat SSE -> chat SSE (bench-gpt, kind openai)",
		concurrency: b.cfg.concurrency,
		bare:        chat("bare", b.bareURL, "sim-gpt", true, header),
		gw:          chat("gateway", b.gwURL, "bench-gpt", true, header),
		print:       b.printStreams,
	}, {
		name:        "rss",
		num:         "3",
		title:       fmt.Sprintf("3. peak RSS holding %d concurrent translated streams, paced simulator (bench-claude-paced)", b.cfg.streams),
		concurrency: b.cfg.streams,
		// The target is the peak while the streams are held, not the peak of the scenarios
		// before (64 clients of non-streamed requests leave other code and buffers resident):
		// printRSS shows both.
		resetPeak: true,
		bare:      chat("bare", b.bareURL, "sim-gpt", true, paced),
		gw:        chat("gateway", b.gwURL, "bench-claude-paced", true, header),
		print:     b.printRSS,
	}}
}

// run drives every scenario against the bare proxy and the gateway, and prints.
func (b *bench) run(ctx context.Context, w io.Writer) error {
	b.header(w)
	var failed []string
	profiles := 0
	if b.cfg.scenarios["pgidle"] {
		if err := b.pgIdle(ctx, w); err != nil {
			return err
		}
	}
	tx0, req0, txErr := b.dbCounts(ctx)
	var ran []string // numbers of the chat scenarios run, for the transactions line
	for _, s := range b.scenarios() {
		if !b.cfg.scenarios[s.name] {
			continue
		}
		ran = append(ran, s.num)
		f, err := b.runScenario(ctx, w, s, &profiles)
		if err != nil {
			return err
		}
		failed = append(failed, f...)
	}
	var txLine, chargeLine string
	if txErr == nil && len(ran) > 0 {
		// Backends report their statistics at most every second when busy and after 10 s when
		// idle, so the count is read once, over the chat scenarios, after that; the uploads
		// come after it, as they would not say much about the chat path.
		if err := sleepCtx(ctx, statsFlush); err != nil {
			return err
		}
		chargeLine = b.chargeStats()
		if tx1, req1, err := b.dbCounts(ctx); err == nil && req1 > req0 {
			// Each dbCounts call is one transaction of its own.
			tx := float64(tx1-tx0-1) / float64(req1-req0)
			txLine = fmt.Sprintf("%.3f (%d transactions, %d requests; target <= %.1f: %s)", tx, tx1-tx0-1, req1-req0, targetTxPerRequest, verdict(tx <= targetTxPerRequest))
		} else {
			txLine = fmt.Sprintf("not measured (%v)", err)
		}
	}
	if pairs := b.pairScenarios(); len(pairs) > 0 {
		// The pairs' transaction counts start from a database whose statistics are complete:
		// just read above, or after the same wait when nothing ran before.
		if txLine == "" {
			if err := sleepCtx(ctx, statsFlush); err != nil {
				return err
			}
		}
		f, err := b.runPairs(ctx, w, pairs, &profiles)
		if err != nil {
			return err
		}
		failed = append(failed, f...)
	}
	if b.cfg.scenarios["batch"] {
		f, err := b.runBatch(ctx, w)
		if err != nil {
			return err
		}
		failed = append(failed, f...)
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
		fmt.Fprintf(w, "\ndatabase transactions per gateway request (chat scenarios %s, warmups included): %s\n", scenarioNumbers(ran), txLine)
		fmt.Fprintf(w, "end-of-answer wait for the durable charge (group commit), chat scenarios: %s\n", chargeLine)
	}
	if profiles > 0 {
		time.Sleep(500 * time.Millisecond) // let the gateway finish writing the last profile
		fmt.Fprintf(w, "\nCPU and allocation profiles of both proxies, one per scenario (numbers above are perturbed by profiling):\n")
		for i := 1; i <= profiles; i++ {
			for _, name := range proxyNames {
				fmt.Fprintf(w, "  go tool pprof -top %s %s\n", b.exe, filepath.Join(b.cfg.profileDir, fmt.Sprintf("%s-%d.pprof", name, i)))
				fmt.Fprintf(w, "  go tool pprof -top -sample_index=alloc_objects -diff_base %s %s %s\n", filepath.Join(b.cfg.profileDir, fmt.Sprintf("%s-%d.allocs-base.pprof", name, i)),
					b.exe, filepath.Join(b.cfg.profileDir, fmt.Sprintf("%s-%d.allocs.pprof", name, i)))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("bench: requests FAILED in %s: those numbers are not valid", strings.Join(failed, ", "))
	}
	return nil
}

// scenario warms both proxies up, then measures them in alternating rounds (bare, gateway,
// gateway, bare, ...) so that slow drifts and other processes' bursts hit both alike.
func (b *bench) scenario(ctx context.Context, s scenario, profile bool) ([2]phaseResult, error) {
	var res [2]phaseResult
	procs := [2]*child{b.bare, b.gw}
	if s.pair {
		procs[0] = b.gw
	}
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
		// Both proxies, also in a pair scenario (the bare one then profiles its idling), so
		// that their profiles keep the same numbers.
		for _, p := range [2]*child{b.bare, b.gw} {
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
	if s.pair {
		// One process serves both sides: each round gets a window of its own instead,
		// the round and the settlement delay after it.
		return res, b.pairRounds(ctx, s, clients, &res)
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
		b.markMemParts()
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
			res[j].rounds = append(res[j].rounds, roundResult{requests: r.requests, chunks: r.chunks, elapsed: r.elapsed, cpu: after.cpu - before.cpu})
		}
	}
	if s.resetPeak {
		b.markMemParts()
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
