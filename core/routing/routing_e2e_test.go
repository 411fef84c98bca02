package routing_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"modelgateway/core/catalog"
	"modelgateway/core/gatewaytest"
	"modelgateway/core/simulator"
	"modelgateway/core/store"
)

// Routing that survives providers (issue 33, contract.md "Routing"): end to end through the
// gateway, with stub upstreams that fail on demand in front of one simulator per route.

// routingCatalog: ra (openai, a pool of two credentials, 3 attempts) then rb (openai) serve
// r-pass, a passthrough route for chat clients; rc (anthropic, 3 attempts) then rd serve
// r-trans, translated. r-split weighs ra 3 : rb 1; r-pair is a 1:1 group of ra and rb.
// r-cool and r-down have fast cooldowns and first-byte timeouts for the breaker tests.
const routingCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [
    {"id": "ra", "kind": "openai", "base_url": "{{UP}}/ra/v1", "api_key_env": ["RK_A1", "RK_A2"],
     "retry": {"attempts": 3, "backoff": "10ms"}, "cooldown": "1s", "timeout": {"first_byte": "1s"}},
    {"id": "rb", "kind": "openai", "base_url": "{{UP}}/rb/v1", "api_key_env": "RK_B",
     "retry": {"attempts": 2, "backoff": "10ms"}, "cooldown": "1s", "timeout": {"first_byte": "1s"}},
    {"id": "rc", "kind": "anthropic", "base_url": "{{UP}}/rc", "api_key_env": "RK_C",
     "retry": {"attempts": 3, "backoff": "10ms"}, "cooldown": "1s", "timeout": {"first_byte": "1s"}},
    {"id": "rd", "kind": "anthropic", "base_url": "{{UP}}/rd", "api_key_env": "RK_D", "cooldown": "1s", "timeout": {"first_byte": "1s"}},
    {"id": "rx", "kind": "openai", "base_url": "{{UP}}/rx/v1", "api_key_env": "RK_B", "cooldown": "1s", "timeout": {"first_byte": "500ms"}},
    {"id": "ry", "kind": "openai", "base_url": "{{UP}}/ry/v1", "api_key_env": "RK_B", "cooldown": "1s", "timeout": {"first_byte": "500ms"}}
  ],
  "models": [
    {"id": "r-pass", "family": "fam", "routes": [
      {"endpoint_families": ["chat.completions"], "provider": "ra", "upstream_model": "up-a"},
      {"endpoint_families": ["chat.completions"], "provider": "rb", "upstream_model": "up-b"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]},
    {"id": "r-trans", "family": "fam", "routes": [
      {"endpoint_families": ["chat.completions"], "provider": "rc", "upstream_model": "up-c"},
      {"endpoint_families": ["chat.completions"], "provider": "rd", "upstream_model": "up-d"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]},
    {"id": "r-split", "family": "fam", "routes": [
      {"endpoint_families": ["chat.completions"], "provider": "ra", "priority": 0, "weight": 3},
      {"endpoint_families": ["chat.completions"], "provider": "rb", "priority": 0, "weight": 1}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]},
    {"id": "r-pair", "family": "fam", "routes": [
      {"endpoint_families": ["chat.completions"], "provider": "ra", "priority": 0},
      {"endpoint_families": ["chat.completions"], "provider": "rb", "priority": 0}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]},
    {"id": "r-cool", "family": "fam", "routes": [
      {"endpoint_families": ["chat.completions"], "provider": "rx"},
      {"endpoint_families": ["chat.completions"], "provider": "rb"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]},
    {"id": "r-down", "family": "fam", "routes": [
      {"endpoint_families": ["chat.completions"], "provider": "rx"},
      {"endpoint_families": ["chat.completions"], "provider": "ry"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]}
  ]
}`

// routeKeys are the credentials' values: what the stub sees in Authorization / x-api-key.
var routeKeys = map[string]string{"RK_A1": "key-a1", "RK_A2": "key-a2", "RK_B": "key-b", "RK_C": "key-c", "RK_D": "key-d"}

// fault is what a stub route does to its next requests.
type fault struct {
	fail       int           // fail this many requests, then answer
	down       bool          // fail every request
	status     int           // the failure's status; 0 drops the connection
	retryAfter string        // the failure's retry-after header
	stall      time.Duration // wait this long before the first byte of those requests
	cut        bool          // answer, but cut the stream after its first chunk
}

// call is one request a stub route received.
type call struct {
	route, key string
	at         time.Time
}

// faultyUpstreams routes /<route>/... to that route's simulator, after its fault.
type faultyUpstreams struct {
	mu      sync.Mutex
	sims    map[string]*simulator.Simulator
	faults  map[string]*fault
	refused map[string]bool // credentials answered 401
	calls   []call
}

func newFaultyUpstreams(t *testing.T) (*faultyUpstreams, string) {
	f := &faultyUpstreams{sims: map[string]*simulator.Simulator{}, faults: map[string]*fault{}, refused: map[string]bool{}}
	for _, r := range []string{"ra", "rb", "rc", "rd", "rx", "ry"} {
		f.sims[r] = simulator.New(simulator.Options{PrefixCache: true})
	}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *faultyUpstreams) set(route string, fl fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[route] = &fl
}

func (f *faultyUpstreams) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = map[string]*fault{}
	f.refused = map[string]bool{}
}

// since returns the calls after the first n.
func (f *faultyUpstreams) since(n int) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls[n:]...)
}

func (f *faultyUpstreams) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *faultyUpstreams) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if k := r.Header.Get("X-Api-Key"); k != "" {
		key = k
	}
	f.mu.Lock()
	f.calls = append(f.calls, call{route: route, key: key, at: time.Now()})
	sim, fl, refused := f.sims[route], f.faults[route], f.refused[key]
	act := fault{}
	if fl != nil {
		act = *fl
		if fl.fail > 0 {
			fl.fail--
		} else if !fl.down {
			act = fault{cut: fl.cut}
		}
	}
	f.mu.Unlock()
	if sim == nil {
		http.NotFound(w, r)
		return
	}
	if refused {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"invalid api key","type":"authentication_error"}}`))
		return
	}
	if act.stall > 0 {
		select {
		case <-time.After(act.stall):
		case <-r.Context().Done():
			return
		}
	}
	if act.fail > 0 || act.down {
		if act.status == 0 {
			panic(http.ErrAbortHandler) // the connection drops: a transport error
		}
		if act.retryAfter != "" {
			w.Header().Set("Retry-After", act.retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(act.status)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"stub failure %d","type":"api_error"}}`, act.status)
		return
	}
	r.URL.Path = "/" + rest
	if act.cut {
		sim.ServeHTTP(&cutWriter{ResponseWriter: w}, r)
		return
	}
	sim.ServeHTTP(w, r)
}

// cutWriter lets the first body write through, flushed, then drops the connection.
type cutWriter struct {
	http.ResponseWriter
	wrote bool
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if c.wrote {
		panic(http.ErrAbortHandler)
	}
	c.wrote = true
	n, err := c.ResponseWriter.Write(p)
	c.ResponseWriter.(http.Flusher).Flush()
	return n, err
}

func (c *cutWriter) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// startRouting starts a gateway with the routing catalogue, the credentials in its
// environment, and a profile with credit.
func startRouting(t *testing.T) (*gatewaytest.Gen, *faultyUpstreams, string) {
	t.Helper()
	up, url := newFaultyUpstreams(t)
	var env []string
	for name, value := range routeKeys {
		env = append(env, name+"="+value)
	}
	g := &gatewaytest.Gen{Gateway: gatewaytest.Start(t, gatewaytest.Options{Env: env})}
	g.Admin("POST", "/admin/v1/catalog:apply", strings.ReplaceAll(routingCatalog, "{{UP}}", url))
	var pid string
	g.Key, pid = g.NewProfile("routing", "1000")
	return g, up, pid
}

// post sends a chat request with the profile's key; a transport failure fails t (a subtest's
// own, unlike Gen.Post).
func post(t *testing.T, g *gatewaytest.Gen, headers map[string]string, body string) (int, http.Header, []byte) {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + g.Key}
	for k, v := range headers {
		h[k] = v
	}
	status, hdr, raw, err := g.Raw("POST", "/v1/chat/completions", h, body)
	if err != nil {
		t.Fatalf("POST /v1/chat/completions: %v", err)
	}
	return status, hdr, raw
}

func chatBody(model string, stream bool, extra string) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"max_tokens":12,"messages":[{"role":"user","content":"hello %s"}]%s}`, model, stream, time.Now().Format(time.RFC3339Nano), extra)
}

// routesOf lists the routes of calls, in order.
func routesOf(calls []call) string {
	var out []string
	for _, c := range calls {
		out = append(out, c.route)
	}
	return strings.Join(out, ",")
}

// answered reports whether a chat answer (streamed or not) arrived whole.
func answered(status int, raw []byte, stream bool) bool {
	if status != 200 {
		return false
	}
	if stream {
		return strings.Contains(string(raw), "[DONE]") && !strings.Contains(string(raw), `"error"`)
	}
	return strings.Contains(string(raw), `"choices"`)
}

// Every retry rule on a passthrough route (openai for a chat client) and a translated one
// (anthropic for a chat client), streamed and not: the same route again after a retryable
// failure, the next route once its attempts are spent, a non-retryable answer passed on at
// once, a stall before the first byte retried within the first-byte timeout, a 429's
// retry-after honoured (or the pool's next credential), a refused credential set aside, a
// stream cut after its first byte not retried and not charged. Each case ends with a plain
// request, which must succeed on the first route (failures do not linger), and every answered
// request is charged exactly once.
func TestRoutingRetriesFallbacksAndCredentials(t *testing.T) {
	g, up, pid := startRouting(t)
	charges := 0
	for _, model := range []struct{ id, first, second string }{{"r-pass", "ra", "rb"}, {"r-trans", "rc", "rd"}} {
		for _, stream := range []bool{false, true} {
			name := fmt.Sprintf("%s stream=%v", model.id, stream)
			cases := []struct {
				name   string
				fault  fault
				want   string // routes called, in order
				ok     bool
				status int // when not ok
				check  func(t *testing.T, calls []call, took time.Duration)
			}{
				{name: "two 503 then an answer on the same route", fault: fault{fail: 2, status: 503},
					want: model.first + "," + model.first + "," + model.first, ok: true},
				{name: "a dropped connection, then an answer", fault: fault{fail: 1},
					want: model.first + "," + model.first, ok: true},
				{name: "a route down: its attempts, then the next route", fault: fault{down: true, status: 502},
					want: model.first + "," + model.first + "," + model.first + "," + model.second, ok: true},
				{name: "400 passes on at once", fault: fault{fail: 1, status: 400},
					want: model.first, status: 400},
				{name: "a stall before the first byte is a timeout, retried", fault: fault{fail: 1, stall: 3 * time.Second, status: 503},
					want: model.first + "," + model.first, ok: true,
					check: func(t *testing.T, calls []call, took time.Duration) {
						if took > 2500*time.Millisecond {
							t.Errorf("took %v: the stalled attempt must end at its 1s first-byte timeout", took)
						}
					}},
				{name: "429 with retry-after", fault: fault{fail: 1, status: 429, retryAfter: "1"},
					want: model.first + "," + model.first, ok: true,
					check: func(t *testing.T, calls []call, took time.Duration) {
						if model.first == "ra" {
							// A pool: the next credential at once, not after the retry-after.
							if calls[0].key == calls[1].key || took > 900*time.Millisecond {
								t.Errorf("429 on a pool: keys %s then %s after %v; want the other credential at once", calls[0].key, calls[1].key, took)
							}
						} else if gap := calls[1].at.Sub(calls[0].at); gap < 950*time.Millisecond {
							t.Errorf("429 with retry-after 1: retried after %v", gap)
						}
					}},
			}
			for _, c := range cases {
				t.Run(name+": "+c.name, func(t *testing.T) {
					up.set(model.first, c.fault)
					n := up.count()
					start := time.Now()
					status, _, raw := post(t, g, nil, chatBody(model.id, stream, ""))
					took := time.Since(start)
					calls := up.since(n)
					if got := routesOf(calls); got != c.want {
						t.Errorf("routes called %s, want %s", got, c.want)
					}
					if c.ok != answered(status, raw, stream) {
						t.Fatalf("answered %v (%d %s), want %v", !c.ok, status, raw, c.ok)
					}
					if !c.ok && status != c.status {
						t.Errorf("status %d, want %d: %s", status, c.status, raw)
					}
					if c.ok {
						charges++
					}
					if c.check != nil {
						c.check(t, calls, took)
					}
					up.clear()
					n = up.count()
					status, _, raw = post(t, g, nil, chatBody(model.id, stream, ""))
					if !answered(status, raw, stream) || routesOf(up.since(n)) != model.first {
						t.Fatalf("a plain request after the case: %d via %s: %s", status, routesOf(up.since(n)), raw)
					}
					charges++
				})
			}
		}
		if t.Failed() {
			return
		}
	}
	gatewaytest.Settled(t, g.Pool(), pid, charges) // every answered request charged once; the ledger sums up

	// A stream cut after its first byte is not retried and not charged. Passthrough: the client
	// has seen the answer start (200, no [DONE]). Translated: the upstream's first event
	// (message_start) is not yet an answer event, so the client gets the 502 before any byte.
	for _, model := range []struct {
		id, first string
		status    int
	}{{"r-pass", "ra", 200}, {"r-trans", "rc", 502}} {
		up.set(model.first, fault{cut: true})
		n := up.count()
		status, _, raw := post(t, g, nil, chatBody(model.id, true, ""))
		if got := routesOf(up.since(n)); got != model.first || status != model.status || strings.Contains(string(raw), "[DONE]") {
			t.Errorf("%s cut after the first byte: %d via %s: %s", model.id, status, got, raw)
		}
		up.clear()
	}

	// A refused credential of the pool: the request goes on with the other one, and the refused
	// one is set aside (the next requests use only the good one).
	up.mu.Lock()
	up.refused["key-a1"] = true
	up.mu.Unlock()
	n := up.count()
	for range 4 {
		if status, _, raw := post(t, g, nil, chatBody("r-pass", false, "")); status != 200 {
			t.Fatalf("with one credential refused: %d %s", status, raw)
		}
	}
	var keys []string
	for _, c := range up.since(n) {
		keys = append(keys, c.key)
	}
	if k := strings.Join(keys, ","); strings.Count(k, "key-a1") > 1 || strings.Count(k, "key-a2") != 4 {
		t.Errorf("keys used %s: the refused key at most once, then set aside", k)
	}
	charges += 4
	gatewaytest.Settled(t, g.Pool(), pid, charges)
}

// Weighted split: r-split weighs ra 3 : rb 1; 400 requests of distinct conversations land
// within 10 % of 300 : 100.
func TestRoutingWeightedSplit(t *testing.T) {
	g, up, _ := startRouting(t)
	n := up.count()
	for i := range 400 {
		body := fmt.Sprintf(`{"model":"r-split","max_tokens":1,"messages":[{"role":"user","content":"conversation %d"}]}`, i)
		if status, _, raw := post(t, g, nil, body); status != 200 {
			t.Fatalf("%d %s", status, raw)
		}
	}
	counts := map[string]int{}
	for _, c := range up.since(n) {
		counts[c.route]++
	}
	if counts["ra"] < 270 || counts["ra"] > 330 || counts["ra"]+counts["rb"] != 400 {
		t.Errorf("split %v, want ra 300 ± 30 of 400", counts)
	}
	t.Logf("weighted split 3:1 over 400 requests: %v", counts)
}

// Affinity: ten requests of one conversation (by prompt_cache_key, by user, by the first user
// message) stay on one route of a 1:1 group, and the growing prompt is served from that
// route's cache.
func TestRoutingAffinityKeepsAConversation(t *testing.T) {
	g, up, _ := startRouting(t)
	for _, conv := range []struct{ name, extra, first string }{
		{"prompt_cache_key", `,"prompt_cache_key":"conv-1"`, ""},
		{"user", `,"user":"user-7"`, ""},
		{"first message", ``, "the same opening question"},
	} {
		n := up.count()
		var history []string
		var cached, input float64
		for i := range 10 {
			first := conv.first
			if first == "" {
				first = fmt.Sprintf("opening %s %d", conv.name, time.Now().UnixNano())
				if i > 0 {
					first = history[0]
				}
			}
			if i == 0 {
				history = append(history, first)
			}
			var msgs []string
			for j, h := range history {
				role := "user"
				if j%2 == 1 {
					role = "assistant"
				}
				msgs = append(msgs, fmt.Sprintf(`{"role":%q,"content":%q}`, role, h))
			}
			body := fmt.Sprintf(`{"model":"r-pair","max_tokens":12,"messages":[%s]%s}`, strings.Join(msgs, ","), conv.extra)
			status, _, raw := post(t, g, nil, body)
			if status != 200 {
				t.Fatalf("%s turn %d: %d %s", conv.name, i, status, raw)
			}
			var a struct {
				Choices []struct{ Message struct{ Content string } }
				Usage   struct {
					PromptTokens        float64 `json:"prompt_tokens"`
					PromptTokensDetails struct {
						CachedTokens float64 `json:"cached_tokens"`
					} `json:"prompt_tokens_details"`
				}
			}
			if err := json.Unmarshal(raw, &a); err != nil || len(a.Choices) == 0 {
				t.Fatalf("%s: %s", conv.name, raw)
			}
			history = append(history, a.Choices[0].Message.Content, fmt.Sprintf("follow-up %d with some words to grow the prompt", i))
			cached += a.Usage.PromptTokensDetails.CachedTokens
			input += a.Usage.PromptTokens
		}
		calls := up.since(n)
		if len(calls) != 10 || strings.Count(routesOf(calls), calls[0].route) != 10 {
			t.Errorf("%s: routes %s, want one route for all ten", conv.name, routesOf(calls))
		}
		if cached == 0 {
			t.Errorf("%s: no cached input over the conversation", conv.name)
		}
		t.Logf("affinity by %s: route %s, cached input %.0f of %.0f (%.0f %%)", conv.name, calls[0].route, cached, input, 100*cached/input)
	}
}

// The breaker: r-cool's first route rx fails 503 every time; its 5th failure in a row sets it
// aside, so requests go straight to rb; after the 1s cooldown exactly one request tries rx
// again, and once rx answers, it is the route again.
func TestRoutingCooldownSkipsThenProbes(t *testing.T) {
	g, up, _ := startRouting(t)
	up.set("rx", fault{down: true, status: 503})
	for i := range 5 {
		n := up.count()
		if status, _, raw := post(t, g, nil, chatBody("r-cool", false, "")); status != 200 {
			t.Fatalf("request %d: %d %s", i, status, raw)
		}
		if got := routesOf(up.since(n)); got != "rx,rb" {
			t.Fatalf("request %d before the breaker opens: %s, want rx,rb", i, got)
		}
	}
	n := up.count()
	for range 3 {
		if status, _, raw := post(t, g, nil, chatBody("r-cool", false, "")); status != 200 {
			t.Fatalf("%d %s", status, raw)
		}
	}
	if got := routesOf(up.since(n)); got != "rb,rb,rb" {
		t.Fatalf("while rx cools down: %s, want rb only", got)
	}
	// Route health on the status page's model matrix: r-cool's chat cell has 1 of 2 routes set aside.
	resp, err := http.Get(g.Base + "/status")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "1 of 2 routes set aside") {
		t.Errorf("the status page does not show rx set aside:\n%s", page)
	}
	time.Sleep(1100 * time.Millisecond)
	up.clear() // rx is back
	n = up.count()
	for range 3 {
		if status, _, raw := post(t, g, nil, chatBody("r-cool", false, "")); status != 200 {
			t.Fatalf("%d %s", status, raw)
		}
	}
	if got := routesOf(up.since(n)); got != "rx,rx,rx" {
		t.Errorf("after the cooldown: %s, want the trial on rx and rx again", got)
	}
}

// The fault test: every route of r-down stalls (no first byte); each request waits at most its
// first-byte timeout (500ms) per attempt and fails 504; once the breakers are open the request
// still tries the routes (never refused for that alone); when ry comes back the first request
// after it succeeds.
func TestRoutingAllDownThenOneBack(t *testing.T) {
	g, up, pid := startRouting(t)
	up.set("rx", fault{down: true, stall: 5 * time.Second, status: 503})
	up.set("ry", fault{down: true, stall: 5 * time.Second, status: 503})
	for i := range 7 {
		n := up.count()
		start := time.Now()
		status, _, raw := post(t, g, nil, chatBody("r-down", false, ""))
		took, attempts := time.Since(start), len(up.since(n))
		if status != 504 || attempts == 0 {
			t.Fatalf("request %d: %d after %d attempts: %s", i, status, attempts, raw)
		}
		if took > time.Duration(attempts)*(500*time.Millisecond+400*time.Millisecond) {
			t.Errorf("request %d took %v for %d attempts: more than the first-byte timeout each", i, took, attempts)
		}
	}
	up.set("rx", fault{down: true, stall: 5 * time.Second, status: 503})
	up.set("ry", fault{})
	n := up.count()
	status, _, raw := post(t, g, nil, chatBody("r-down", false, ""))
	if status != 200 {
		t.Fatalf("the first request after ry came back: %d via %s: %s", status, routesOf(up.since(n)), raw)
	}
	gatewaytest.Settled(t, g.Pool(), pid, 1) // only the answered request is charged
}

// The request record lists every attempt (ListUsage), and only the one that answered is
// charged: a 503 on ra, then ra's answer; a request whose every attempt failed has its
// attempts listed and no charge.
func TestRoutingRecordsEveryAttempt(t *testing.T) {
	g, up, pid := startRouting(t)
	up.set("ra", fault{fail: 1, status: 503})
	if status, _, raw := post(t, g, map[string]string{"X-Request-Id": "route-rec-1"}, chatBody("r-pass", false, "")); status != 200 {
		t.Fatalf("%d %s", status, raw)
	}
	up.set("ra", fault{down: true, status: 400})
	if status, _, raw := post(t, g, map[string]string{"X-Request-Id": "route-rec-2"}, chatBody("r-pass", false, "")); status != 400 {
		t.Fatalf("%d %s", status, raw)
	}
	gatewaytest.Settled(t, g.Pool(), pid, 1)
	want := map[string]string{
		"route-rec-1": `[ra up-a 503 upstream_status] [ra up-a 200 ]`,
		"route-rec-2": `[ra up-a 400 upstream_status]`,
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		usage := g.Admin("GET", "/admin/v1/profiles/"+pid+"/usage", "")
		got := map[string]string{}
		costs := map[string]any{}
		for _, r := range usage["records"].([]any) {
			rec := r.(map[string]any)
			var parts []string
			for _, a := range rec["attempts"].([]any) {
				at := a.(map[string]any)
				if _, ok := at["duration_ms"]; !ok {
					t.Errorf("attempt without duration_ms: %v", at)
				}
				parts = append(parts, fmt.Sprintf("[%v %v %v %v]", at["provider"], at["upstream_model"], at["status"], at["error_code"]))
			}
			got[rec["request_id"].(string)] = strings.Join(parts, " ")
			costs[rec["request_id"].(string)] = rec["cost"]
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			if costs["route-rec-1"] != "0.012" || (costs["route-rec-2"] != nil && costs["route-rec-2"] != "") {
				t.Errorf("costs %v: the answered request charged once, the failed one not at all", costs)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("records' attempts %v, want %v", got, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// make run's demo-balanced: two weighted simulator routes, the first a pool whose second
// credential the demo simulator refuses. Every request is answered; the revoked credential is
// tried at most once and then set aside; a conversation's later turns report cached input.
func TestDemoBalancedShowsPoolsAndAffinity(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv(simulator.KeyEnv, "simulator")
	t.Setenv(simulator.RevokedKeyEnv, simulator.RevokedKey)
	simURL, err := simulator.StartDemo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var keys []string
	spy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		mu.Unlock()
		target, _ := url.Parse(simURL)
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(spy.Close)
	e := gatewaytest.Start(t, gatewaytest.Options{})          // the simulator's keys from the environment, set above
	doc, err := catalog.Parse(simulator.DemoCatalog(spy.URL)) // YAML: applied as make run does
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&store.Store{Pool: e.Pool()}).ApplyCatalog(ctx, doc); err != nil {
		t.Fatal(err)
	}
	// The replica reloads on the change's notification, as make run's does.
	gatewaytest.WaitFor(t, 20*time.Second, "the demo catalogue on the replica", func() bool {
		_, _, body := gatewaytest.GetCatalog(t, e.Base, "")
		return strings.Contains(string(body), `"demo-balanced"`)
	})
	g := &gatewaytest.Gen{Gateway: e}
	g.Key, _ = g.NewProfile("demo", "1000")
	// Distinct conversations: sim-pool-a (weight 3) serves most, its pool in turn, so the
	// revoked credential comes up, is refused, and the request goes on with the other.
	for i := range 10 {
		body := fmt.Sprintf(`{"model":"demo-balanced","max_tokens":4,"messages":[{"role":"user","content":"question %d"}]}`, i)
		if status, _, raw := post(t, g, nil, body); status != 200 {
			t.Fatalf("request %d: %d %s", i, status, raw)
		}
	}
	msgs := `{"role":"user","content":"tell me about routing"}`
	var cachedLater float64
	for i := range 6 {
		body := `{"model":"demo-balanced","max_tokens":4,"prompt_cache_key":"demo-conv","messages":[` + msgs + `]}`
		status, _, raw := post(t, g, nil, body)
		if status != 200 {
			t.Fatalf("turn %d: %d %s", i, status, raw)
		}
		var a struct {
			Choices []struct{ Message struct{ Content string } }
			Usage   struct {
				PromptTokensDetails struct {
					CachedTokens float64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		if err := json.Unmarshal(raw, &a); err != nil || len(a.Choices) == 0 {
			t.Fatalf("turn %d: %s", i, raw)
		}
		if i > 0 {
			cachedLater += a.Usage.PromptTokensDetails.CachedTokens
		}
		reply, _ := json.Marshal(a.Choices[0].Message.Content)
		msgs += `,{"role":"assistant","content":` + string(reply) + `},{"role":"user","content":"and then? tell me more"}`
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(strings.Join(keys, ","), simulator.RevokedKey); n != 1 {
		t.Errorf("the revoked credential was sent %d times: %v; want once, then set aside", n, keys)
	}
	if cachedLater == 0 {
		t.Error("a conversation kept on one route reported no cached input")
	}
}
