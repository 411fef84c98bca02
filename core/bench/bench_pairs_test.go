package bench

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"modelgateway/core/catalog"
)

func TestParseScenariosSelectsByNameOrAll(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: defaultScenarios, want: []string{"passthrough", "pgidle", "rss", "stream", "streampass"}},
		{in: "budget", want: []string{"budget"}},
		{in: " routes , chain,routes", want: []string{"chain", "routes"}},
		{in: "all", want: slices.Sorted(slices.Values(scenarioNames))},
		{in: "passthrough,all", want: slices.Sorted(slices.Values(scenarioNames))},
		{in: "budgets", wantErr: `unknown scenario "budgets"`},
		{in: "uploads", wantErr: `unknown scenario "uploads"`},
		{in: "", wantErr: "names no scenario"},
		{in: " , ", wantErr: "names no scenario"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseScenarios(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseScenarios(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for n, on := range got {
				if on {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			if diff := cmp.Diff(tc.want, names); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

// The default run is the bare/gateway scenarios only; every pair scenario is named and
// selectable (its name is what setUpPairs and pairScenarios look up).
func TestDefaultRunLeavesThePairsOut(t *testing.T) {
	t.Parallel()
	def, err := parseScenarios(defaultScenarios)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := parseScenarios("all")
	b := &bench{cfg: benchConfig{scenarios: all, concurrency: 4}, key: "k", gwURL: "http://gw"}
	b.pairs = pairSetup{budgetKey: "kb", chainLast: "resp_1", chainItems: nil}
	pairs := b.pairScenarios()
	var names []string
	for _, s := range pairs {
		names = append(names, s.name)
		if def[s.name] {
			t.Errorf("pair scenario %s runs by default", s.name)
		}
		if !s.pair || s.names[0] == "" || s.names[1] == "" {
			t.Errorf("pair scenario %s: pair %v, names %q", s.name, s.pair, s.names)
		}
	}
	if diff := cmp.Diff([]string{"budget", "routes", "chain"}, names); diff != "" {
		t.Errorf("pair scenarios (-want +got):\n%s", diff)
	}
	b.cfg.scenarios = def
	if got := b.pairScenarios(); len(got) != 0 {
		t.Errorf("default selection gives %d pair scenarios", len(got))
	}
}

// Each pair differs from its baseline in the one thing it measures: the key, the model, or
// the conversation sent inline against previous_response_id.
func TestPairScenariosDifferOnlyInWhatTheyMeasure(t *testing.T) {
	t.Parallel()
	all, _ := parseScenarios("all")
	b := &bench{cfg: benchConfig{scenarios: all, concurrency: 4, inputTokens: 20000}, key: "k1", gwURL: "http://gw"}
	b.pairs = pairSetup{budgetKey: "k2", chainLast: "resp_9", chainItems: []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"turn 1"}`), json.RawMessage(`{"type":"message","role":"assistant","content":[]}`)}}
	by := map[string]scenario{}
	for _, s := range b.pairScenarios() {
		by[s.name] = s
	}
	budget := by["budget"]
	if string(budget.bare.body) != string(budget.gw.body) || budget.bare.url != budget.gw.url {
		t.Errorf("budget: bodies or URLs differ: %s %s / %s %s", budget.bare.url, budget.bare.body, budget.gw.url, budget.gw.body)
	}
	if strings.Contains(string(budget.gw.body), "#sim:input") {
		t.Errorf("budget body %s reports 20000 input tokens: the token limit (an int32 per minute) would refuse", budget.gw.body)
	}
	if got := [2]string{budget.bare.header.Get("Authorization"), budget.gw.header.Get("Authorization")}; got != [2]string{"Bearer k1", "Bearer k2"} {
		t.Errorf("budget keys %q", got)
	}
	if budget.cpuTarget != 1.05 || !budget.sameTx {
		t.Errorf("budget targets %v, same transactions %v", budget.cpuTarget, budget.sameTx)
	}
	routes := by["routes"]
	if strings.Replace(string(routes.bare.body), `"bench-gpt"`, `"bench-gpt-2routes"`, 1) != string(routes.gw.body) {
		t.Errorf("routes: bodies differ beyond the model: %s / %s", routes.bare.body, routes.gw.body)
	}
	if routes.cpuTarget != 1.03 || routes.bare.header.Get("Authorization") != routes.gw.header.Get("Authorization") {
		t.Errorf("routes: target %v, keys %q %q", routes.cpuTarget, routes.bare.header.Get("Authorization"), routes.gw.header.Get("Authorization"))
	}
	chain := by["chain"]
	wantInline := `{"model":"bench-gpt-responses","store":false,"input":[{"role":"user","content":"turn 1"},{"type":"message","role":"assistant","content":[]},{"role":"user","content":"and now?"}]}`
	wantStored := `{"model":"bench-gpt-responses","store":false,"previous_response_id":"resp_9","input":"and now?"}`
	if diff := cmp.Diff([2]string{wantInline, wantStored}, [2]string{string(chain.bare.body), string(chain.gw.body)}); diff != "" {
		t.Errorf("chain bodies (-want +got):\n%s", diff)
	}
	for _, body := range [][]byte{chain.bare.body, chain.gw.body} {
		if !json.Valid(body) {
			t.Errorf("chain body is not JSON: %s", body)
		}
	}
	if chain.bare.url != "http://gw/v1/responses" || chain.gw.url != chain.bare.url {
		t.Errorf("chain URLs %s, %s", chain.bare.url, chain.gw.url)
	}
}

// The catalogue the bench applies must be one the gateway takes: the pair models with their
// routing fields included.
func TestBenchCatalogParses(t *testing.T) {
	t.Parallel()
	doc, err := catalog.Parse([]byte(benchCatalog("http://127.0.0.1:1", "http://127.0.0.1:2")))
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string][]catalog.Route{}
	for _, m := range doc.Models {
		routes[m.ID] = m.Routes
	}
	two := routes["bench-gpt-2routes"]
	if len(two) != 2 || two[0].Provider == two[1].Provider {
		t.Fatalf("bench-gpt-2routes routes %+v, want two of different providers", two)
	}
	for _, r := range two {
		if r.Priority == nil || *r.Priority != 0 || r.Weight == nil || *r.Weight != 1 {
			t.Errorf("route %s: priority %v, weight %v; want one group, 1:1", r.Provider, r.Priority, r.Weight)
		}
	}
	if r := routes["bench-gpt-responses"]; len(r) != 1 || !slices.Equal(r[0].EndpointFamilies, []string{"responses"}) {
		t.Errorf("bench-gpt-responses routes %+v", r)
	}
}

func TestPairRatioLineSaysTheVerdict(t *testing.T) {
	t.Parallel()
	phase := func(requests int, cpu time.Duration, p99 time.Duration) phaseResult {
		var r phaseResult
		r.requests, r.elapsed, r.window.cpu, r.latencies = requests, time.Second, cpu, []time.Duration{p99}
		return r
	}
	s := scenario{names: [2]string{"unlimited", "budgeted"}, cpuTarget: 1.05}
	tests := []struct {
		name string
		s    scenario
		res  [2]phaseResult
		want string
	}{
		{"within the target", s, [2]phaseResult{phase(1000, 100*time.Millisecond, 5*time.Millisecond), phase(1000, 104*time.Millisecond, 6*time.Millisecond)},
			"  budgeted/unlimited: CPU per request 1.040x (target <= 1.05x: ok), +4.0 µs; throughput 1.00x; p99 +1.00ms"},
		{"above the target", s, [2]phaseResult{phase(1000, 100*time.Millisecond, 5*time.Millisecond), phase(900, 99*time.Millisecond, 5*time.Millisecond)},
			"  budgeted/unlimited: CPU per request 1.100x (target <= 1.05x: MISSED), +10.0 µs; throughput 0.90x; p99 +0.00ms"},
		{"no target", scenario{names: [2]string{"inline", "stored"}}, [2]phaseResult{phase(1000, 100*time.Millisecond, 5*time.Millisecond), phase(1000, 80*time.Millisecond, 4*time.Millisecond)},
			"  stored/inline: CPU per request 0.800x, -20.0 µs; throughput 1.00x; p99 -1.00ms"},
	}
	for _, tc := range tests {
		if got := pairRatioLine(tc.s, tc.res); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestPairTxLineComparesTransactionsPerRequest(t *testing.T) {
	t.Parallel()
	same := scenario{names: [2]string{"unlimited", "budgeted"}, sameTx: true}
	tx := func(tx0, c0, r0, tx1, c1, r1 int64) pairTx {
		return pairTx{tx: [2]int64{tx0, tx1}, commits: [2]int64{c0, c1}, requests: [2]int64{r0, r1}, d: 2 * time.Second}
	}
	tests := []struct {
		name string
		s    scenario
		tx   pairTx
		want string
	}{
		{"the same", same, tx(50, 40, 1000, 56, 44, 1000),
			"for 2s, then 11s for the statistics): unlimited 0.050 = 0.040 group commits + 0.010 others (50 in 1000 requests), budgeted 0.056 = 0.044 group commits + 0.012 others (56 in 1000 requests); others +0.002 (target: the same, within 0.01: ok)"},
		// Fewer requests a second make smaller groups: more commits per request, not a
		// cost of the request path.
		{"smaller groups under less load", same, tx(50, 40, 1000, 60, 52, 650),
			"; others +0.002 (target: the same, within 0.01: ok)"},
		{"a lease transaction per several requests", same, tx(50, 40, 1000, 175, 40, 1000),
			"; others +0.125 (target: the same, within 0.01: MISSED)"},
		{"fewer is not the same either", same, tx(80, 40, 1000, 50, 40, 1000),
			"; others -0.030 (target: the same, within 0.01: MISSED)"},
		{"without the gateway's metrics, the totals", same, tx(50, -1, 1000, 56, -1, 1000),
			"unlimited 0.050 (50 in 1000 requests), budgeted 0.056 (56 in 1000 requests); +0.006 (target: the same, within 0.01: ok)"},
		{"no target", scenario{names: [2]string{"inline", "stored"}}, tx(50, 40, 1000, 1050, 40, 1000),
			"stored 1.050 = 0.040 group commits + 1.010 others (1050 in 1000 requests); others +1.000"},
		{"not measured", same, pairTx{err: os.ErrDeadlineExceeded}, "not measured (i/o timeout)"},
	}
	for _, tc := range tests {
		got := pairTxLine(tc.s, tc.tx)
		if !strings.HasSuffix(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant it to end with %q", tc.name, got, tc.want)
		}
	}
}

func TestCommitCountIsTheInfBucket(t *testing.T) {
	t.Parallel()
	n, ok := commitCount(waitReading{commits: waitHistogram{0.001: 3, 0.01: 9, math.Inf(1): 12}})
	if !ok || n != 12 {
		t.Errorf("commitCount = %v, %v; want 12, true", n, ok)
	}
	if _, ok := commitCount(waitReading{}); ok {
		t.Error("no metrics read as a count")
	}
}

func TestScenarioNumbersJoinARunOfThree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want string
	}{{[]string{"1", "2", "3"}, "1 to 3"}, {[]string{"1", "3"}, "1, 3"}, {[]string{"2"}, "2"}, {[]string{"2", "3"}, "2, 3"}} {
		if got := scenarioNumbers(tc.in); got != tc.want {
			t.Errorf("scenarioNumbers(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A pair's table is labelled by its sides, with PostgreSQL's cost per side.
func TestPrintSidesLabelsAPairsRows(t *testing.T) {
	t.Parallel()
	phase := func(requests int, pg time.Duration) phaseResult {
		var r phaseResult
		r.concurrency, r.requests, r.elapsed, r.window.pgCPU = 4, requests, time.Second, pg
		return r
	}
	b := &bench{layout: layout{name: "two"}, pg: nil}
	var out strings.Builder
	s := scenario{pair: true, names: [2]string{"1 route", "2 routes"}}
	b.printSides(&out, s, "", [2]phaseResult{phase(10, 0), phase(20, 0)}, func(phaseResult) string { return "" })
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "  1 route ") || !strings.HasPrefix(lines[2], "  2 routes ") {
		t.Errorf("rows not labelled by side:\n%s", out.String())
	}
	out.Reset()
	b.printCommon(&out, "", [2]phaseResult{phase(10, 0), phase(20, 0)}, func(phaseResult) string { return "" })
	if !strings.Contains(out.String(), "\n  bare ") || !strings.Contains(out.String(), "\n  gateway ") {
		t.Errorf("bare/gateway rows:\n%s", out.String())
	}
}

// A pair's allocations are the gateway's count over both sides' requests.
func TestAllocsLineOfAPairCountsBothSides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gateway-3.mallocs"), []byte("3000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bare-3.mallocs"), []byte("50\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &bench{cfg: benchConfig{profileDir: dir}}
	var res [2]phaseResult
	res[0].requests, res[1].requests = 10, 20
	got := b.allocsLine(3, scenario{pair: true, names: [2]string{"inline", "stored"}}, res)
	if want := "gateway 100 (inline and stored together"; !strings.HasPrefix(got, want) {
		t.Errorf("pair: %q, want it to start with %q", got, want)
	}
	if got := b.allocsLine(3, scenario{}, res); got != "bare 5, gateway 150" {
		t.Errorf("bare/gateway: %q", got)
	}
}
