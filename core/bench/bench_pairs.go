package bench

// Pair scenarios: the gateway against itself, one feature on and off in the same run (issues
// 32, 33, 34). Both sides are sent to the gateway in alternating rounds as the bare/gateway
// scenarios are; because one process serves both, each round is followed by the settlement
// delay and measured with it (the deferred work of exactly that round's requests), and the
// database transactions per request of each side are counted in a phase of their own.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// scenarioNames are what -scenarios selects, in the order they run (the upload scenario has
// its own flag, -uploads).
var scenarioNames = []string{"pgidle", "passthrough", "stream", "streampass", "rss", "budget", "routes", "chain", "batch"}

// defaultScenarios leaves the pair scenarios out: at the default -duration each takes about
// a minute and a half (a settlement pause after every round, and each side alone for
// -duration plus statsFlush for its transaction counts), so the three would more than
// double the default run.
const defaultScenarios = "pgidle,passthrough,stream,streampass,rss"

// scenarioSet is the scenarios -scenarios selected.
type scenarioSet map[string]bool

// parseScenarios reads -scenarios: names from scenarioNames separated by commas, or "all".
func parseScenarios(s string) (scenarioSet, error) {
	set := scenarioSet{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == "all":
			for _, n := range scenarioNames {
				set[n] = true
			}
		case slices.Contains(scenarioNames, name):
			set[name] = true
		case name == "":
		default:
			return nil, fmt.Errorf("bench: -scenarios: unknown scenario %q (known: %s, all)", name, strings.Join(scenarioNames, ", "))
		}
	}
	if len(set) == 0 {
		return nil, errors.New("bench: -scenarios names no scenario")
	}
	return set, nil
}

// statsFlush outlasts PostgreSQL's delay in publishing a backend's transaction counts: at
// most every second while it is busy, 10 s after it went idle.
const statsFlush = 11 * time.Second

// Pair scenario settings.
const (
	// The budget and token limit of the budgeted key: large enough never to refuse, so that
	// the pair measures the accounting, not refusals. max_tokens_per_minute is an int32; the
	// scenario's requests count their tokens (no input marker), or 20000 input tokens each
	// would pass it at about 1800 requests per second.
	budgetAmount   = "1000000000"
	budgetPeriod   = "MONTH"
	budgetTokenCap = 2_000_000_000
	// chainTurns is the stored conversation's length.
	chainTurns = 20
	chainModel = "bench-gpt-responses"
	// pairTxTolerance: transactions per request of two sides that ride on the same leases
	// and group commits differ by the background's noise; one extra round trip per request
	// adds 1, a lease of its own per several requests about 0.1.
	pairTxTolerance = 0.01
)

// pairSetup is what the selected pair scenarios need beyond the bench's key.
type pairSetup struct {
	budgetKey  string            // the budgeted, token-limited key (budget)
	chainLast  string            // the last stored response of the conversation (chain)
	chainItems []json.RawMessage // the conversation's items as a client keeps them (chain)
}

// setUpPairs provisions what the selected pair scenarios need: a second key of the bench's
// profile with a budget and a token limit, and a stored conversation.
func (b *bench) setUpPairs(ctx context.Context) error {
	if b.cfg.scenarios["budget"] {
		var key struct {
			Secret string `json:"secret"`
		}
		policy := map[string]any{"name": "bench-budget", "allowed_endpoints": []string{"*"}, "allowed_models": []string{"*"},
			"budget": map[string]any{"amount": budgetAmount, "period": budgetPeriod}, "max_tokens_per_minute": budgetTokenCap}
		if err := b.admin(ctx, "/admin/v1/profiles/"+b.profileID+"/keys", policy, &key); err != nil {
			return err
		}
		if key.Secret == "" {
			return errors.New("admin CreateKey (budgeted) returned no secret")
		}
		b.pairs.budgetKey = key.Secret
	}
	if b.cfg.scenarios["chain"] {
		return b.storeConversation(ctx)
	}
	return nil
}

// storeConversation stores a conversation of chainTurns responses, each continuing the one
// before, and keeps what a client without stored responses would send instead: its own
// inputs and the output items it was answered.
func (b *bench) storeConversation(ctx context.Context) error {
	prev := ""
	var items []json.RawMessage
	for i := range chainTurns {
		input := fmt.Sprintf("turn %d: tell me more", i+1)
		req := map[string]any{"model": chainModel, "input": input}
		if prev != "" {
			req["previous_response_id"] = prev
		}
		var resp struct {
			ID     string            `json:"id"`
			Output []json.RawMessage `json:"output"`
		}
		if err := b.postRetrying(ctx, "/v1/responses", req, &resp); err != nil {
			return fmt.Errorf("stored conversation, turn %d: %w", i+1, err)
		}
		if resp.ID == "" || len(resp.Output) == 0 {
			return fmt.Errorf("stored conversation, turn %d: a response without id or output", i+1)
		}
		user, _ := json.Marshal(map[string]string{"role": "user", "content": input})
		items = append(append(items, user), resp.Output...)
		prev = resp.ID
	}
	b.pairs.chainLast, b.pairs.chainItems = prev, items
	return nil
}

// postRetrying posts a generation request with the bench's key until it succeeds, for up to
// 15 s: a new key is in force within a second.
func (b *bench) postRetrying(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.gwURL+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+b.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		var data []byte
		if err == nil {
			data, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return json.Unmarshal(data, out)
			}
			err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(data))
		}
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pairScenarios are the selected pair scenarios; side 0 is the baseline.
func (b *bench) pairScenarios() []scenario {
	header := func(key string) http.Header {
		return http.Header{"Authorization": {"Bearer " + key}, "Content-Type": {"application/json"}}
	}
	marked := "hello"
	if b.cfg.inputTokens > 0 {
		marked += " #sim:input=" + strconv.Itoa(b.cfg.inputTokens)
	}
	chat := func(name, model, content, key string) target {
		body := `{"model":"` + model + `","messages":[{"role":"user","content":"` + content + `"}]}`
		return target{name: name, url: b.gwURL + "/v1/chat/completions", body: []byte(body), header: header(key)}
	}
	var out []scenario
	if b.cfg.scenarios["budget"] {
		out = append(out, scenario{
			name: "budget",
			title: fmt.Sprintf("5. a key with a budget {%s, %s} and max_tokens_per_minute %d next to an unlimited key of the same profile: chat non-streamed passthrough (bench-gpt), tokens counted",
				budgetAmount, budgetPeriod, budgetTokenCap),
			concurrency: b.cfg.concurrency, pair: true, names: [2]string{"unlimited", "budgeted"},
			cpuTarget: 1.05, sameTx: true,
			bare: chat("unlimited", "bench-gpt", "hello", b.key),
			gw:   chat("budgeted", "bench-gpt", "hello", b.pairs.budgetKey),
		})
	}
	if b.cfg.scenarios["routes"] {
		out = append(out, scenario{
			name:        "routes",
			title:       "6. a healthy two-route group (bench-gpt-2routes: two providers, one upstream, priority 0, weights 1:1) next to one route (bench-gpt): chat non-streamed passthrough",
			concurrency: b.cfg.concurrency, pair: true, names: [2]string{"1 route", "2 routes"},
			cpuTarget: 1.03,
			bare:      chat("1 route", "bench-gpt", marked, b.key),
			gw:        chat("2 routes", "bench-gpt-2routes", marked, b.key),
		})
	}
	if b.cfg.scenarios["chain"] {
		var inline bytes.Buffer
		inline.WriteString(`{"model":"` + chainModel + `","store":false,"input":[`)
		for _, it := range b.pairs.chainItems {
			inline.Write(it)
			inline.WriteByte(',')
		}
		inline.WriteString(`{"role":"user","content":"and now?"}]}`)
		stored := `{"model":"` + chainModel + `","store":false,"previous_response_id":"` + b.pairs.chainLast + `","input":"and now?"}`
		url := b.gwURL + "/v1/responses"
		out = append(out, scenario{
			name: "chain",
			title: fmt.Sprintf("7. a %d-turn stored conversation continued with previous_response_id next to the same conversation sent inline: POST /v1/responses (%s, store:false, %d items)",
				chainTurns, chainModel, len(b.pairs.chainItems)+1),
			concurrency: b.cfg.concurrency, pair: true, names: [2]string{"inline", "stored"},
			bare: target{name: "inline", url: url, body: inline.Bytes(), header: header(b.key)},
			gw:   target{name: "stored", url: url, body: []byte(stored), header: header(b.key)},
		})
	}
	return out
}

// pairTx is the database transactions, the gateway's group commits (-1: not measured) and
// the request records of each side of a pair, each side alone under load.
type pairTx struct {
	tx, commits, requests [2]int64
	load                  [2]loadResult
	d                     time.Duration // each side's load
	err                   error
}

// perRequest is a side's transactions per request record.
func (t pairTx) perRequest(j int) float64 { return float64(t.tx[j]) / float64(max(t.requests[j], 1)) }

// othersPerRequest is a side's transactions besides the group commits per request record:
// leases, request records, background. How many charges a commit groups depends on the
// load (fewer requests a second, smaller groups), not on the request; an extra round trip
// or a lease of its own shows here.
func (t pairTx) othersPerRequest(j int) float64 {
	return float64(t.tx[j]-t.commits[j]) / float64(max(t.requests[j], 1))
}

// pairTransactions runs each side alone for the measured time and reads the database's
// counters after statsFlush; it starts from counters that are complete (see run).
func (b *bench) pairTransactions(ctx context.Context, s scenario) pairTx {
	out := pairTx{d: cmp.Or(s.duration, b.cfg.duration)}
	client := newLoadClient(s.concurrency)
	defer client.CloseIdleConnections()
	tx0, req0, err := b.dbCounts(ctx)
	if err != nil {
		out.err = err
		return out
	}
	c0, ok0 := commitCount(b.chargeWaits())
	for j, t := range [2]target{s.bare, s.gw} {
		out.load[j] = runLoad(ctx, client, t, s.concurrency, out.d)
		if err := sleepCtx(ctx, statsFlush); err != nil {
			out.err = err
			return out
		}
		tx1, req1, err := b.dbCounts(ctx)
		if err != nil {
			out.err = err
			return out
		}
		c1, ok1 := commitCount(b.chargeWaits())
		// Each dbCounts call is one transaction of its own.
		out.tx[j], out.requests[j], out.commits[j] = tx1-tx0-1, req1-req0, -1
		if ok0 && ok1 {
			out.commits[j] = int64(c1 - c0)
		}
		tx0, req0, c0, ok0 = tx1, req1, c1, ok1
	}
	return out
}

// commitCount is the group commits the gateway has made, from its histogram's +Inf bucket.
func commitCount(r waitReading) (float64, bool) {
	n, ok := r.commits[math.Inf(1)]
	return n, ok
}

// runPairs counts the transactions of every selected pair first, one phase after the other
// (each needs statsFlush after it, and the next one starts from there), then measures and
// prints each pair.
func (b *bench) runPairs(ctx context.Context, w io.Writer, pairs []scenario, profiles *int) (failed []string, err error) {
	txs := make([]pairTx, len(pairs))
	for i, s := range pairs {
		txs[i] = b.pairTransactions(ctx, s)
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
	}
	for i, s := range pairs {
		s.print = func(w io.Writer, res [2]phaseResult) { b.printPair(w, s, res, txs[i]) }
		f, err := b.runScenario(ctx, w, s, profiles)
		if err != nil {
			return nil, err
		}
		failed = append(failed, f...)
		num, _, _ := strings.Cut(s.title, ".")
		for j, r := range txs[i].load {
			if r.errors > 0 {
				failed = append(failed, fmt.Sprintf("scenario %s %s (transactions phase)", num, s.names[j]))
			}
		}
	}
	return failed, nil
}

// pairRounds measures the rounds of a pair scenario. The gateway serves both sides, so each
// round is a window of its own: the round, then settleGrace for its deferred work. The
// columns' percentages are of the round alone; CPU per request is of the whole window.
func (b *bench) pairRounds(ctx context.Context, s scenario, clients [2]*http.Client, res *[2]phaseResult) error {
	targets := [2]target{s.bare, s.gw}
	round := cmp.Or(s.duration, b.cfg.duration) / time.Duration(b.cfg.rounds)
	for k := range b.cfg.rounds {
		order := []int{0, 1}
		if k%2 == 1 {
			order = []int{1, 0}
		}
		for _, j := range order {
			if err := ctx.Err(); err != nil {
				return context.Cause(ctx)
			}
			before, err := b.sample(b.gw)
			if err != nil {
				return fmt.Errorf("%s: %w", targets[j].name, err)
			}
			r := runLoad(ctx, clients[j], targets[j], s.concurrency, round)
			loaded, err := b.sample(b.gw)
			if err != nil {
				return fmt.Errorf("%s: %w", targets[j].name, err)
			}
			if err := sleepCtx(ctx, settleGrace); err != nil {
				return err
			}
			after, err := b.sample(b.gw)
			if err != nil {
				return fmt.Errorf("%s: %w", targets[j].name, err)
			}
			res[j].loadResult.merge(r)
			res[j].cpuSample = res[j].cpuSample.plus(loaded.minus(before))
			res[j].window = res[j].window.plus(after.minus(before))
			res[j].rounds = append(res[j].rounds, roundResult{requests: r.requests, chunks: r.chunks, elapsed: r.elapsed, cpu: after.cpu - before.cpu})
		}
	}
	for j := range res {
		slices.Sort(res[j].latencies)
		var err error
		if res[j].hwm, res[j].rss, err = memory(b.gw.cmd.Process.Pid); err != nil {
			return fmt.Errorf("%s: %w", targets[j].name, err)
		}
	}
	return nil
}

// printPair prints a pair scenario: the table, the ratio of side 1 to side 0 against the
// scenario's target, its spread over the rounds, and each side's transactions per request.
func (b *bench) printPair(w io.Writer, s scenario, res [2]phaseResult, tx pairTx) {
	b.printSides(w, s, "  CPU µs/req", res, func(r phaseResult) string { return fmt.Sprintf("  %10.1f", r.cpuPerReq()) })
	fmt.Fprintln(w, pairRatioLine(s, res))
	printSpread(w, res, "CPU per request", roundResult.cpuPerReq)
	fmt.Fprintln(w, pairTxLine(s, tx))
}

// pairRatioLine is side 1 against side 0: CPU per request (with the scenario's target, if
// any), throughput and the p99 difference.
func pairRatioLine(s scenario, res [2]phaseResult) string {
	cpu := res[1].cpuPerReq() / res[0].cpuPerReq()
	target := ""
	if s.cpuTarget > 0 {
		target = fmt.Sprintf(" (target <= %.2fx: %s)", s.cpuTarget, verdict(cpu <= s.cpuTarget))
	}
	gap := res[1].percentile(99) - res[0].percentile(99)
	return fmt.Sprintf("  %s/%s: CPU per request %.3fx%s, %+.1f µs; throughput %.2fx; p99 %+.2fms",
		s.names[1], s.names[0], cpu, target, res[1].cpuPerReq()-res[0].cpuPerReq(), res[1].rps()/res[0].rps(), float64(gap.Microseconds())/1000)
}

// pairTxLine is each side's database transactions per request, from its phase alone, with
// the group commits among them.
func pairTxLine(s scenario, tx pairTx) string {
	if tx.err != nil {
		return fmt.Sprintf("  database transactions per request: not measured (%v)", tx.err)
	}
	split := tx.commits[0] >= 0 && tx.commits[1] >= 0
	side := func(j int) string {
		if !split {
			return fmt.Sprintf("%s %.3f (%d in %d requests)", s.names[j], tx.perRequest(j), tx.tx[j], tx.requests[j])
		}
		return fmt.Sprintf("%s %.3f = %.3f group commits + %.3f others (%d in %d requests)", s.names[j], tx.perRequest(j),
			float64(tx.commits[j])/float64(max(tx.requests[j], 1)), tx.othersPerRequest(j), tx.tx[j], tx.requests[j])
	}
	line := fmt.Sprintf("  database transactions per request (each side alone for %v, then %v for the statistics): %s, %s",
		tx.d, statsFlush, side(0), side(1))
	what, diff := "", tx.perRequest(1)-tx.perRequest(0)
	if split {
		// Group commits per request follow the load; the others follow the request path.
		what, diff = " others", tx.othersPerRequest(1)-tx.othersPerRequest(0)
	}
	line += fmt.Sprintf(";%s %+.3f", what, diff)
	if s.sameTx {
		line += fmt.Sprintf(" (target: the same, within %.2f: %s)", pairTxTolerance, verdict(math.Abs(diff) <= pairTxTolerance))
	}
	return line
}
