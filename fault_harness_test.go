package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"modelgateway/core/gatewaytest"
	"modelgateway/core/simulator"
	"modelgateway/core/store/pgcluster"
	"modelgateway/core/store/pgproxy"
	"modelgateway/core/store/storetest"
)

// The fault harness of issue 13: real `gateway serve` processes built from this package, each
// reaching PostgreSQL through its own pgproxy (which the test freezes, cuts or takes down), the
// upstream simulator in the test process, and plain HTTP clients that note exactly what they
// received. Every fault test ends with checkLedger.

// faultCatalog: f-chat costs exactly 0.012 for a 12-word answer (output 1000 per 1M, input
// free), so its hold and its charge are equal; f-heavy charges input too (for usage above the
// estimate); f-rt is a realtime model with a small reserve.
const faultCatalog = `{
  "currency": "RUB",
  "families": [{"id": "fam"}],
  "providers": [{"id": "up", "kind": "openai", "base_url": "{{UP}}/v1", "api_key_env": "UP_KEY"}],
  "models": [
    {"id": "f-chat", "family": "fam", "routes": [{"endpoint_families": ["chat.completions"], "provider": "up", "upstream_model": "up-gpt"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "0", "output": "1000"}]},
    {"id": "f-heavy", "family": "fam", "routes": [{"endpoint_families": ["chat.completions"], "provider": "up", "upstream_model": "up-gpt"}],
     "prices": [{"endpoint_families": ["chat.completions"], "billing_mode": "per_token", "input": "1000", "output": "1000"}]},
    {"id": "f-rt", "family": "fam", "routes": [{"endpoint_families": ["realtime"], "provider": "up", "upstream_model": "gpt-realtime"}],
     "prices": [{"endpoint_families": ["realtime"], "billing_mode": "per_token", "input": "1", "output": "10"}]}
  ]
}`

// chatCost is what one plain f-chat answer costs.
var chatCost = decimal.RequireFromString("0.012")

// cleanupBound is how long the system may take to finish the records of requests that a dead
// or cut-off replica left in progress.
const cleanupBound = 60 * time.Second

// faultEnv is one database (a clone on the shared test cluster, or a cluster of its own that
// the test may stop), the upstream simulator and the replicas started on them.
type faultEnv struct {
	t       *testing.T
	db      string // direct connection string, for the checks
	pool    *pgxpool.Pool
	cluster *pgcluster.Cluster // only when the test owns the server
	opts    pgcluster.Options
	upURL   string
	client  *http.Client
	dir     string

	mu       sync.Mutex
	replicas []*replica
	applied  bool
	cleaned  bool            // waitNoInProgress has run
	killed   map[string]bool // replicas killed (kill -9) by the test, by name
}

type faultOptions struct {
	// ownCluster gives the test a PostgreSQL server of its own, which it may stop and start.
	ownCluster bool
	// chunkDelay paces the simulator's streams (and non-streamed answers as much).
	chunkDelay time.Duration
}

func newFaultEnv(t *testing.T, o faultOptions) *faultEnv {
	t.Helper()
	gatewaytest.Binary(t)
	f := &faultEnv{t: t, dir: t.TempDir(), client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}}
	if o.ownCluster {
		// Not t.TempDir: the postgres user must reach the data directory when tests run as root.
		dir, err := os.MkdirTemp("", "pgf")
		if err != nil {
			t.Fatal(err)
		}
		// The port must stay the same across a restart, so it is chosen here; another process
		// may take it between freePort and the server's bind (tests start in parallel), so a
		// start that fails is tried again on a fresh port, with the server's words kept.
		for attempt := 1; ; attempt++ {
			var log gatewaytest.SyncBuffer
			f.opts = pgcluster.Options{Dir: dir, Port: gatewaytest.FreePort(t), Log: &log}
			if f.cluster, err = pgcluster.Start(context.Background(), f.opts); err == nil {
				break
			}
			if attempt == 3 {
				os.RemoveAll(dir)
				t.Fatalf("%v\n%s", err, log.String())
			}
			t.Logf("postgres start %d on port %d: %v\n%s", attempt, f.opts.Port, err, log.String())
		}
		f.db = strings.Replace(f.cluster.URL("postgres"), "/postgres?", "/gateway?", 1)
		if err := pgExec(f.cluster.URL("postgres"), "CREATE DATABASE gateway"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			f.cluster.Stop()
			os.RemoveAll(dir)
		})
	} else {
		f.db = storetest.DatabaseURL(t)
	}
	pool, err := pgxpool.New(context.Background(), f.db)
	if err != nil {
		t.Fatal(err)
	}
	f.pool = pool
	// Cleanups run last-in first-out: the replicas go first (registered in start), then the
	// simulator and the pool, then the database.
	t.Cleanup(pool.Close)
	f.upURL = gatewaytest.StartUpstream(t, simulator.Options{ChunkDelay: o.chunkDelay}).URL
	t.Cleanup(f.client.CloseIdleConnections)
	return f
}

// stopDatabase stops the test's own PostgreSQL server (fast shutdown: sessions are ended).
func (f *faultEnv) stopDatabase() {
	f.pool.Reset()
	f.cluster.Stop()
}

// startDatabase starts it again on the same data and port.
func (f *faultEnv) startDatabase() {
	c, err := pgcluster.Start(context.Background(), f.opts)
	if err != nil {
		f.t.Fatalf("restart postgres: %v", err)
	}
	f.cluster = c
}

// replica is one `gateway serve` process reaching the database through its own proxy.
type replica struct {
	*gatewaytest.Gateway
	name  string
	f     *faultEnv
	proxy *pgproxy.Proxy
}

// start runs a replica; env adds to (or overrides) its environment. The first replica of an
// environment applies the catalogue.
func (f *faultEnv) start(name string, env ...string) *replica {
	t := f.t
	t.Helper()
	target, err := pgproxy.TargetOf(f.db)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := pgproxy.Start(target)
	if err != nil {
		t.Fatal(err)
	}
	// Registered before the replica's own cleanup, so it runs after the replica is killed.
	t.Cleanup(proxy.Close)
	dbURL, err := proxy.URL(f.db)
	if err != nil {
		t.Fatal(err)
	}
	g := gatewaytest.Start(t, gatewaytest.Options{Name: name, DatabaseURL: dbURL, LogDir: f.dir, Env: env})
	r := &replica{Gateway: g, name: name, f: f, proxy: proxy}
	f.mu.Lock()
	f.replicas = append(f.replicas, r)
	first := !f.applied
	f.applied = true
	f.mu.Unlock()
	if first {
		r.admin(t, "POST", "/admin/v1/catalog:apply", strings.ReplaceAll(faultCatalog, "{{UP}}", f.upURL))
	}
	return r
}

// kill ends the replica at once (kill -9).
func (r *replica) kill() {
	r.f.mu.Lock()
	if r.f.killed == nil {
		r.f.killed = map[string]bool{}
	}
	r.f.killed[r.name] = true
	r.f.mu.Unlock()
	r.Kill()
}

func (f *faultEnv) wasKilled(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed[name]
}

// do sends one request and returns status, headers and body; err is a transport failure.
func (r *replica) do(method, path string, headers map[string]string, body string) (int, http.Header, []byte, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.Base+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := r.f.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, raw, err
}

func (r *replica) admin(t testing.TB, method, path, body string) map[string]any {
	t.Helper()
	status, _, raw, err := r.do(method, path, map[string]string{"Authorization": "Bearer " + adminToken}, body)
	if err != nil || status != 200 {
		t.Fatalf("admin %s %s on %s: %d %s %v", method, path, r.name, status, raw, err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("admin %s %s: %s", method, path, raw)
	}
	return out
}

// profile makes a profile with credit and a key for everything.
func (r *replica) profile(t testing.TB, credit string) (key, pid string) {
	t.Helper()
	p := r.admin(t, "POST", "/admin/v1/profiles", `{"display_name":"F","external_ref":"f:`+uuid.NewString()+`"}`)
	pid = p["id"].(string)
	r.admin(t, "POST", "/admin/v1/profiles/"+pid+":credit", `{"amount":"`+credit+`","reason":"topup","idempotency_key":"c1"}`)
	k := r.admin(t, "POST", "/admin/v1/profiles/"+pid+"/keys", `{"name":"all","allowed_endpoints":["*"],"allowed_models":["*"]}`)
	key = k["secret"].(string)
	// The contract gives the other replicas 1 s to learn of the key; wait for it, generously.
	r.f.mu.Lock()
	all := append([]*replica(nil), r.f.replicas...)
	r.f.mu.Unlock()
	for _, o := range all {
		gatewaytest.WaitFor(t, 30*time.Second, "the key on "+o.name, func() bool {
			status, _, _, _ := o.do("GET", "/v1/balance", map[string]string{"Authorization": "Bearer " + key}, "")
			return status == 200 || !o.Alive()
		})
	}
	return key, pid
}

// seen is what a client saw of one request.
type seen struct {
	replica string
	profile string
	id      string // x-request-id sent, or the one the gateway answered with
	stream  bool
	status  int
	code    string          // the envelope's code when status is not 200
	full    bool            // the whole answer arrived: the body of a 200, or a stream's terminal event
	cost    string          // x-request-cost of a non-streamed answer
	want    decimal.Decimal // the cost of a full answer: what it must be charged
	err     error
	at      time.Time // when the answer ended
}

func (o seen) String() string {
	return fmt.Sprintf("%s %s stream=%v: %d %s full=%v err=%v", o.replica, o.id, o.stream, o.status, o.code, o.full, o.err)
}

// chat sends an f-chat (or model) request and reads the whole answer.
type chatReq struct {
	key, profile, id, model, prompt string
	stream                          bool
	maxTokens                       int
	want                            decimal.Decimal // the cost of a full answer
}

func (r *replica) chat(q chatReq) seen {
	if q.model == "" {
		q.model = "f-chat"
	}
	if q.prompt == "" {
		q.prompt = "hi"
	}
	if q.maxTokens == 0 {
		q.maxTokens = 12
	}
	if q.want.IsZero() {
		q.want = chatCost
	}
	body := fmt.Sprintf(`{"model":%q,"max_tokens":%d,"stream":%v,"messages":[{"role":"user","content":%q}]}`, q.model, q.maxTokens, q.stream, q.prompt)
	h := map[string]string{"Authorization": "Bearer " + q.key}
	if q.id != "" {
		h["X-Request-Id"] = q.id
	}
	o := seen{replica: r.name, profile: q.profile, id: q.id, stream: q.stream, want: q.want}
	status, hdr, raw, err := r.do("POST", "/v1/chat/completions", h, body)
	o.status, o.err, o.at = status, err, time.Now()
	if hdr != nil && o.id == "" {
		o.id = hdr.Get("X-Request-Id")
	}
	switch {
	case status == 200 && q.stream:
		o.full = bytes.Contains(raw, []byte("data: [DONE]"))
	case status == 200:
		var ans struct {
			Choices []json.RawMessage
			Usage   *json.RawMessage
		}
		o.full = err == nil && json.Unmarshal(raw, &ans) == nil && len(ans.Choices) > 0 && ans.Usage != nil
		o.cost = hdr.Get("X-Request-Cost")
	case status != 0:
		var e struct{ Error struct{ Code string } }
		_ = json.Unmarshal(raw, &e)
		o.code = e.Error.Code
	}
	return o
}

// record keeps outcomes from many goroutines.
type record struct {
	mu  sync.Mutex
	all []seen
}

func (rec *record) add(o seen) {
	rec.mu.Lock()
	rec.all = append(rec.all, o)
	rec.mu.Unlock()
}

func (rec *record) snapshot() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.all...)
}

func (rec *record) count(pred func(seen) bool) int {
	n := 0
	for _, o := range rec.snapshot() {
		if pred(o) {
			n++
		}
	}
	return n
}

func full(o seen) bool { return o.full }

func pgExec(dsn, sql string) error {
	pool, err := pgxpool.New(context.Background(), dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = pool.Exec(context.Background(), sql)
	return err
}

// realtime opens a session on f-rt with the key and a client-chosen request id.
func (r *replica) realtime(t *testing.T, key, id string) *websocket.Conn {
	t.Helper()
	url := "ws" + strings.TrimPrefix(r.Base, "http") + "/v1/realtime?model=f-rt"
	c, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Authorization": {"Bearer " + key}, "X-Request-Id": {id}})
	if err != nil {
		t.Fatalf("realtime dial on %s: %v (%v)", r.name, err, resp)
	}
	t.Cleanup(func() { c.Close() })
	if ev := event(t, c); ev["type"] != "session.created" {
		t.Fatalf("first realtime event %v", ev)
	}
	return c
}

// balance reads a profile's ledger balance and its number of charges straight from the
// database.
func (f *faultEnv) balance(t testing.TB, pid string) (decimal.Decimal, int) {
	t.Helper()
	var b decimal.Decimal
	var n int
	if err := f.pool.QueryRow(context.Background(), `
		SELECT p.balance, (SELECT count(*) FROM ledger_entries e WHERE e.profile_id = p.id AND e.kind = 'charge')
		FROM profiles p WHERE p.id = $1::uuid`, pid).Scan(&b, &n); err != nil {
		t.Fatalf("read balance: %v", err)
	}
	return b, n
}

// rtDone reads events until a response.done (true) or until the session ends or stays silent
// for 30 s (false): a gateway may end a session rather than forward a response it refuses.
func rtDone(t *testing.T, c *websocket.Conn) bool {
	t.Helper()
	for {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		kind, data, err := c.ReadMessage()
		if err != nil {
			t.Logf("realtime session ended: %v", err)
			return false
		}
		if kind != websocket.TextMessage {
			continue
		}
		var ev struct{ Type string }
		if json.Unmarshal(data, &ev) == nil && ev.Type == "response.done" {
			return true
		}
	}
}
